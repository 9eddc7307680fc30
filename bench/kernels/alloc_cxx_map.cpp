// C++ container churn, the allocation pattern of a server's request handling or an indexer:
// each of T threads (argv[1], default 1) builds an std::unordered_map<std::string, std::vector<int>>
// of KEYS keys (strings longer than the small-string buffer, so each is a heap block), appends
// to the vectors (they grow by reallocation), erases every other key and rebuilds, ROUNDS times.
// Deterministic; prints a checksum.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#ifndef KEYS
#define KEYS 50000
#endif
#ifndef ROUNDS
#define ROUNDS 4
#endif
static unsigned long work(int me) {
  unsigned long sum = 0;
  std::unordered_map<std::string, std::vector<int>> m;
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < KEYS; i++) {
      std::string k = "key-of-some-length-" + std::to_string(me) + "-" + std::to_string(i);
      auto &v = m[k];
      for (int j = 0; j < 1 + (i % 7); j++) v.push_back(i + j + r);
    }
    for (int i = 0; i < KEYS; i += 2)
      m.erase("key-of-some-length-" + std::to_string(me) + "-" + std::to_string(i));
    for (auto &kv : m) sum += kv.second.size() + kv.first.size();
  }
  return sum;
}
int main(int argc, char **argv) {
  int t = argc > 1 ? std::atoi(argv[1]) : 1;
  if (t < 1 || t > 64) t = 1;
  std::vector<unsigned long> sums(t);
  std::vector<std::thread> th;
  for (int i = 0; i < t; i++) th.emplace_back([i, &sums] { sums[i] = work(i); });
  for (auto &x : th) x.join();
  unsigned long s = 0;
  for (auto v : sums) s += v;
  std::printf("%lu\n", s);
  return 0;
}
