// The host memory pool of allocate_cache (src/llm_datadist/host_pool.h):
// aligned first-fit chunks of one MallocMem region, merged back on release,
// LLM_OUT_OF_MEMORY when nothing fits, nothing handed out once closed.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "host_pool.h"

namespace llm_datadist::internal {
namespace {

TEST(HostPool, AlignedFirstFitChunksMergeBack) {
  HostPool pool;
  ASSERT_EQ(pool.Init(4000), LLM_SUCCESS);  // rounded up to 8 chunks of 512
  ASSERT_EQ(pool.Size(), 4096U);
  EXPECT_EQ(pool.Init(512), LLM_PARAM_INVALID);  // once
  HostPool::Chunk a{}, b{}, c{};
  ASSERT_EQ(pool.Alloc(1, &a), LLM_SUCCESS);
  ASSERT_EQ(pool.Alloc(513, &b), LLM_SUCCESS);
  ASSERT_EQ(pool.Alloc(512, &c), LLM_SUCCESS);
  EXPECT_EQ(a, (HostPool::Chunk{pool.Base(), 512}));
  EXPECT_EQ(b, (HostPool::Chunk{pool.Base() + 512, 1024}));
  EXPECT_EQ(c, (HostPool::Chunk{pool.Base() + 1536, 512}));
  std::memset(reinterpret_cast<void *>(b.first), 0x5a, b.second);  // the memory is usable
  EXPECT_EQ(pool.FreeBytes(), 4096U - 2048U);
  // The freed first chunk is the first fit again; a larger request skips it.
  pool.Release({a});
  HostPool::Chunk d{};
  ASSERT_EQ(pool.Alloc(1024, &d), LLM_SUCCESS);
  EXPECT_EQ(d.first, pool.Base() + 2048);
  ASSERT_EQ(pool.Alloc(100, &a), LLM_SUCCESS);
  EXPECT_EQ(a.first, pool.Base());
  // Everything back: one range of the whole region, so the whole region fits again.
  pool.Release({b, d, a, c});
  EXPECT_EQ(pool.FreeBytes(), 4096U);
  HostPool::Chunk all{};
  ASSERT_EQ(pool.Alloc(4096, &all), LLM_SUCCESS);
  EXPECT_EQ(all, (HostPool::Chunk{pool.Base(), 4096}));
  EXPECT_EQ(pool.Alloc(1, &a), LLM_OUT_OF_MEMORY);
  pool.Release({all, {pool.Base() + 8192, 512}});  // a chunk outside the region is ignored
  EXPECT_EQ(pool.FreeBytes(), 4096U);
}

TEST(HostPool, BadSizesAndClosedPool) {
  HostPool empty;
  EXPECT_EQ(empty.Init(0), LLM_PARAM_INVALID);
  HostPool::Chunk c{};
  EXPECT_EQ(empty.Alloc(1, &c), LLM_FAILED);  // never initialized
  HostPool pool;
  ASSERT_EQ(pool.Init(1024), LLM_SUCCESS);
  EXPECT_EQ(pool.Alloc(2048, &c), LLM_OUT_OF_MEMORY);
  pool.Close();
  pool.Close();
  EXPECT_EQ(pool.Alloc(1, &c), LLM_FAILED);
  EXPECT_EQ(pool.FreeBytes(), 0U);
}

}  // namespace
}  // namespace llm_datadist::internal
