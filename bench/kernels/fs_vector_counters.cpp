// A std::vector of per-thread counters (C++): each thread counts the odd bytes of its part of
// a buffer into counts[id]. The buffer is read through `const unsigned char *`, which may alias
// the counters, so even -O2 loads and stores counts[id] on every hit: the vector's elements,
// 8 bytes apart on one line, are falsely shared. With -DPADDED (the padded twin) each counter
// is a 64-byte aligned struct: one line per thread.
#include <cstdio>
#include <thread>
#include <vector>
#ifndef BYTES
#define BYTES (1L << 24)
#endif
#ifndef REPS
#define REPS 8
#endif
#ifdef PADDED
struct alignas(64) Counter {
  long n = 0;
};
#else
struct Counter {
  long n = 0;
};
#endif
static void count(const unsigned char *data, long len, std::vector<Counter> &counts, int id) {
  for (int r = 0; r < REPS; r++)
    for (long i = 0; i < len; i++)
      if (data[i] & 1) counts[id].n++;
}
int main() {
  const int threads = 2;
  std::vector<unsigned char> buf(threads * BYTES);
  for (long i = 0; i < (long)buf.size(); i++) buf[i] = (unsigned char)(i * 2654435761u >> 13);
  std::vector<Counter> counts(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++)
    pool.emplace_back(count, buf.data() + t * BYTES, (long)BYTES, std::ref(counts), t);
  for (auto &t : pool) t.join();
  long total = 0;
  for (auto &c : counts) total += c.n;
  std::printf("%ld\n", total);
  return 0;
}
