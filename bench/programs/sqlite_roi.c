/* The sqlite3 driver for `cargo xtask bench --only regions` (docs/regions.md, "Overhead"):
 * one in-memory database, ROWS rows inserted, then QUERIES point queries and range counts
 * through prepared statements. The region is around the query loop ("query_loop", one
 * execution), or with -DPER_QUERY around each query ("query", QUERIES executions: the case
 * sampling is for). Prints a checksum.
 * Usage: sqlite_roi ROWS QUERIES */
/* One translation unit (first: it sets its feature macros): the region follows the calls
 * into sqlite's own code. */
#include "sqlite3.c"
#include <profcc.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int rows = argc > 1 ? atoi(argv[1]) : 100000, queries = argc > 2 ? atoi(argv[2]) : 100000;
  sqlite3 *db;
  sqlite3_stmt *ins, *get, *range;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
  sqlite3_exec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v INTEGER, s TEXT);"
                   "CREATE INDEX tv ON t(v);", 0, 0, 0);
  sqlite3_exec(db, "BEGIN", 0, 0, 0);
  sqlite3_prepare_v2(db, "INSERT INTO t(k, v, s) VALUES(?, ?, ?)", -1, &ins, 0);
  for (int i = 0; i < rows; i++) {
    char s[32];
    snprintf(s, sizeof s, "row-%d", i);
    sqlite3_bind_int(ins, 1, i);
    sqlite3_bind_int(ins, 2, (i * 7919) % 1000);
    sqlite3_bind_text(ins, 3, s, -1, SQLITE_TRANSIENT);
    sqlite3_step(ins);
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  sqlite3_exec(db, "COMMIT", 0, 0, 0);
  sqlite3_prepare_v2(db, "SELECT v FROM t WHERE k = ?", -1, &get, 0);
  sqlite3_prepare_v2(db, "SELECT count(*) FROM t WHERE v BETWEEN ? AND ?", -1, &range, 0);
  long long sum = 0;
  unsigned x = 12345;
#ifndef PER_QUERY
  PROFCC_ROI_BEGIN("query_loop");
#endif
  for (int q = 0; q < queries; q++) {
#ifdef PER_QUERY
    PROFCC_ROI_BEGIN("query");
#endif
    x = x * 1103515245u + 12345u;
    if (q % 16 == 0) {
      int lo = (int)(x >> 8) % 1000;
      sqlite3_bind_int(range, 1, lo);
      sqlite3_bind_int(range, 2, lo + 2);
      if (sqlite3_step(range) == SQLITE_ROW) sum += sqlite3_column_int64(range, 0);
      sqlite3_reset(range);
    } else {
      sqlite3_bind_int(get, 1, (int)((x >> 4) % (unsigned)rows));
      if (sqlite3_step(get) == SQLITE_ROW) sum += sqlite3_column_int64(get, 0);
      sqlite3_reset(get);
    }
#ifdef PER_QUERY
    PROFCC_ROI_END("query");
#endif
  }
#ifndef PER_QUERY
  PROFCC_ROI_END("query_loop");
#endif
  sqlite3_finalize(get);
  sqlite3_finalize(range);
  sqlite3_close(db);
  printf("%lld\n", sum);
  return 0;
}
