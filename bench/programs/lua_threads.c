/* A real malloc-heavy program for `cargo xtask bench --only alloc`: the Lua 5.4 interpreter
 * (lua-src's sources, built with it), one Lua state per thread, T threads (argv[1], default 1),
 * each running the script below ROUNDS times (argv[2], default 80). Lua allocates through its
 * `l_alloc` (lauxlib.c): realloc for every new or resized block, free for every release, so
 * the allocation path seen here is realloc's, not malloc's. The script's shape: the string
 * building, table churn and garbage collection of a template or log-processing script.
 * Deterministic: each thread prints the same checksum on every run. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"

static const char *script =
    "local rounds = ...\n"
    "local sum = 0\n"
    "for r = 1, rounds do\n"
    "  local rows = {}\n"
    "  for i = 1, 2000 do\n"
    "    local row = { id = i, name = 'user' .. (i * 7919 % 1000), tags = {} }\n"
    "    for k = 1, 1 + i % 4 do row.tags[k] = string.format('t%d_%d', k, i % 13) end\n"
    "    rows[i] = row\n"
    "  end\n"
    "  local parts = {}\n"
    "  for i = 1, #rows, 3 do\n"
    "    local row = rows[i]\n"
    "    parts[#parts + 1] = row.name .. ':' .. table.concat(row.tags, ',')\n"
    "  end\n"
    "  local text = table.concat(parts, ';')\n"
    "  local count = {}\n"
    "  for w in text:gmatch('t%d_%d+') do count[w] = (count[w] or 0) + 1 end\n"
    "  for _, n in pairs(count) do sum = sum + n end\n"
    "  sum = sum + #text\n"
    "end\n"
    "return sum\n";

static long rounds = 80;

static void *work(void *arg) {
  long *out = arg;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_loadstring(L, script) != LUA_OK) {
    fprintf(stderr, "lua_threads: %s\n", lua_tostring(L, -1));
    exit(1);
  }
  lua_pushinteger(L, rounds);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    fprintf(stderr, "lua_threads: %s\n", lua_tostring(L, -1));
    exit(1);
  }
  *out = (long)lua_tointeger(L, -1);
  lua_close(L);
  return 0;
}

int main(int argc, char **argv) {
  int t = argc > 1 ? atoi(argv[1]) : 1;
  if (argc > 2) rounds = atol(argv[2]);
  if (t < 1 || t > 64 || rounds < 1) {
    fprintf(stderr, "usage: %s [threads 1-64] [rounds]\n", argv[0]);
    return 2;
  }
  pthread_t th[64];
  long sums[64];
  for (int i = 0; i < t; i++) pthread_create(&th[i], 0, work, &sums[i]);
  for (int i = 0; i < t; i++) pthread_join(th[i], 0);
  for (int i = 0; i < t; i++) printf("thread %d: checksum %ld\n", i, sums[i]);
  return 0;
}
