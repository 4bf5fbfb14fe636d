#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "adxl/adxl_engine.h"
#include "pattern.h"
#include "peer_process.h"

using namespace adxl;
using namespace adxl_test;

TEST(Smoke, WriteReadOverLoopback) {
  PeerProcess peer;
  const std::string name = LoopbackName(FreePort());
  ASSERT_EQ(peer.Command("init " + name), "ok");
  auto a = peer.Ok("alloc 1048576");
  ASSERT_EQ(a.size(), 2u);
  uintptr_t raddr = std::stoull(a[1]);
  ASSERT_EQ(peer.Ok("reg 0").size(), 1u);

  AdxlEngine e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), SUCCESS);
  std::vector<uint8_t> buf(1 << 20);
  FillPattern(buf.data(), buf.size(), 7);
  MemHandle h;
  ASSERT_EQ(e.RegisterMem({reinterpret_cast<uintptr_t>(buf.data()), buf.size()}, MEM_HOST, h), SUCCESS);
  ASSERT_EQ(e.Connect(name.c_str(), 5000), SUCCESS);
  ASSERT_EQ(e.TransferSync(name.c_str(), WRITE, {{reinterpret_cast<uintptr_t>(buf.data()), raddr, buf.size()}}, 5000),
            SUCCESS);
  EXPECT_EQ(peer.Ok("hash 0 0 1048576")[0], std::to_string(Hash(buf.data(), buf.size())));
  ASSERT_EQ(peer.Command("fill 0 9"), "ok");
  ASSERT_EQ(e.TransferSync(name.c_str(), READ, {{reinterpret_cast<uintptr_t>(buf.data()), raddr, buf.size()}}, 5000),
            SUCCESS);
  std::vector<uint8_t> want(1 << 20);
  FillPattern(want.data(), want.size(), 9);
  EXPECT_EQ(buf, want);
}
