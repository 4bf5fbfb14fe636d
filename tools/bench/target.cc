#include "target.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "adxl/adxl_engine.h"
#include "buffer.h"
#include "engine_runner.h"
#include "lane.h"
#include "side_channel.h"
#include "tcp_baseline.h"
#include "tcp_limit.h"
#include "ucp_baseline.h"

namespace bench {
namespace {

constexpr uint64_t kMaxBuffer = 64ull << 30;  // refuse absurd sizes from a confused peer

int Fail(const std::string &why) {
  fprintf(stderr, "adxl-bench target: %s\n", why.c_str());
  return 2;
}

// Everything the target holds, destroyed in reverse order: the baselines and
// the engine let go of the buffer before it is unmapped or freed.
struct TargetState {
  PageBuffer buffer;
  PageBuffer device;  // device directions with device memory on this side
  adxl::AdxlEngine engine;
  adxl::MemHandle handle = nullptr;
  adxl::MemHandle device_handle = nullptr;
  std::unique_ptr<UcpTarget> ucp;
  std::unique_ptr<TcpTarget> tcp;
  std::vector<std::unique_ptr<TcpTarget>> tcp_limit;  // the limit's streams (tcp_limit.h)
  TlsChoice tls;
  ~TargetState() {
    tcp_limit.clear();
    tcp.reset();
    ucp.reset();
    if (handle != nullptr) engine.DeregisterMem(handle);
    if (device_handle != nullptr) engine.DeregisterMem(device_handle);
    engine.Finalize();
  }
};

// HELLO: configure transports, then create buffer, engine and UCP worker.
bool SetUp(const Options &o, const Message &hello, TargetState *s, Message *ready, std::string *why) {
  uint64_t version = 0, size = 0, want_ucp = 0;
  if (hello.verb != "HELLO" || !hello.GetU64("version", &version) || !hello.GetU64("size", &size) ||
      !hello.GetU64("ucp", &want_ucp)) {
    *why = "expected HELLO version= size= ucp=, got " + hello.verb;
    return false;
  }
  if (version != kSideChannelVersion) {
    *why = "initiator speaks side-channel version " + std::to_string(version) + ", this target " +
           std::to_string(kSideChannelVersion) + ": use the same adxl-bench on both hosts";
    return false;
  }
  if (size == 0 || size > kMaxBuffer) {
    *why = "buffer size " + std::to_string(size) + " out of range";
    return false;
  }
  // UCX reads UCX_TLS when a context is created: set it before the engine.
  std::string tls = hello.Get("tls");
  s->tls = ApplyTls(tls == "-" ? std::string() : tls);
  // Absent in an older initiator's HELLO: host, as it was then.
  Memory memory = Memory::kHost;
  const std::string wanted = hello.Get("memory");
  if (!wanted.empty() && !ParseMemory(wanted, &memory)) {
    *why = "HELLO memory='" + wanted + "': expected host or adxl";
    return false;
  }
  // Absent in an older initiator's HELLO: huge, as numpy gives the peers.
  Pages pages = Pages::kHuge;
  const std::string wanted_pages = hello.Get("pages");
  if (!wanted_pages.empty() && !ParsePages(wanted_pages, &pages)) {
    *why = "HELLO pages='" + wanted_pages + "': expected huge or base";
    return false;
  }
  if (!PageBuffer::Allocate(size, memory, pages, &s->buffer, why)) return false;
  adxl::Status st = s->engine.Initialize(o.local_engine.c_str(), EngineOptions(memory));
  if (st != adxl::SUCCESS) {
    *why = "engine Initialize('" + o.local_engine + "') returned " + StatusName(st);
    return false;
  }
  st = s->engine.RegisterMem({s->buffer.addr(), s->buffer.size()}, adxl::MEM_HOST, s->handle);
  if (st != adxl::SUCCESS) {
    *why = std::string("engine RegisterMem returned ") + StatusName(st);
    return false;
  }
  uint64_t want_device = 0;
  if (hello.GetU64("device", &want_device) && want_device != 0) {
    if (!PageBuffer::AllocateDevice(size, &s->device, why)) return false;
    st = s->engine.RegisterMem({s->device.addr(), s->device.size()}, adxl::MEM_DEVICE, s->device_handle);
    if (st != adxl::SUCCESS) {
      *why = std::string("engine RegisterMem(MEM_DEVICE) returned ") + StatusName(st) +
             (st == adxl::UNSUPPORTED ? ": UCX here cannot move device memory (the engine's log says what is missing)"
                                      : "");
      return false;
    }
  }
  *ready = Message("OK");
  if (s->device.data() != nullptr) ready->Set("daddr", s->device.addr());
  if (want_ucp != 0) {
    TargetProgress progress = hello.Get("progress") == "poll" ? TargetProgress::kPoll : TargetProgress::kEvent;
    s->ucp = UcpTarget::Create(s->buffer.data(), s->buffer.size(), progress, why);
    if (!s->ucp) return false;
    ready->Set("ucp_addr", ToHex(s->ucp->worker_address())).Set("ucp_rkey", ToHex(s->ucp->packed_rkey()));
  }
  uint64_t want_tcp = 0;
  if (hello.GetU64("tcp", &want_tcp) && want_tcp != 0) {
    // The engine's IP, a port of its own: the initiator connects where its
    // engine connects.
    std::string host;
    uint16_t engine_port = 0;
    if (!SplitHostPort(o.local_engine, &host, &engine_port, why)) return false;
    s->tcp = TcpTarget::Create(s->buffer.data(), s->buffer.size(), host, why);
    if (!s->tcp) return false;
    ready->Set("tcp_port", s->tcp->port());
    std::string ports;
    for (int i = 0; i < kLimitStreams; ++i) {
      s->tcp_limit.push_back(TcpTarget::Create(s->buffer.data(), s->buffer.size(), host, why, kLimitSocketBuffer));
      if (!s->tcp_limit.back()) return false;
      ports += (ports.empty() ? "" : ",") + std::to_string(s->tcp_limit.back()->port());
    }
    ready->Set("tcp_limit_ports", ports);
  }
  ready->Set("engine", o.local_engine).Set("addr", s->buffer.addr()).Set("size", s->buffer.size());
  ready->Set("memory", MemoryOptionName(memory));
  // For the cma baseline (same host only): whom to copy to.
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  ready->Set("pid", static_cast<uint64_t>(getpid())).Set("host", host);
  ready->Set("tls", s->tls.value.empty() ? "-" : s->tls.value).Set("tls_source", s->tls.source);
  return true;
}

// One step command of the verify pass; false only when the answer cannot be sent.
bool Serve(SideChannel &ch, const Message &m, TargetState &s, bool *bye, std::string *why) {
  uint64_t len = 0, seed = 0, hash = 0;
  Message reply("OK");
  // "mem=device": the device buffer of the device directions.
  const PageBuffer &b = m.Get("mem") == "device" ? s.device : s.buffer;
  bool len_ok = m.GetU64("len", &len) && len <= b.size();
  std::string failed;
  if (m.verb == "BYE") {
    *bye = true;
  } else if (!len_ok) {
    reply = Message("ERR");
    reply.text = m.verb + ": missing len or len over the buffer size";
  } else if (m.verb == "FILL" && m.GetU64("seed", &seed)) {
    if (!FillBuffer(b, len, seed, &failed)) reply = Message("ERR");
  } else if (m.verb == "CLEAR") {
    if (!PoisonBuffer(b, len, &failed)) reply = Message("ERR");
  } else if (m.verb == "HASH") {
    if (HashBuffer(b, len, &hash, &failed)) {
      reply.Set("hash", hash);
    } else {
      reply = Message("ERR");
    }
  } else {
    reply = Message("ERR");
    reply.text = "unknown command " + m.verb;
  }
  if (!failed.empty()) reply.text = m.verb + ": " + failed;
  return ch.Send(reply, why);
}

}  // namespace

int RunTarget(const Options &o) {
  std::string why;
  Fd listener;
  SideChannel ch;
  if (!SideChannel::Listen(o.side_channel, &listener, &why) ||
      !SideChannel::Accept(listener, o.accept_timeout_s * 1000, &ch, &why)) {
    return Fail(why);
  }
  listener.Reset();  // one initiator per target
  Message hello, ready;
  if (!ch.Receive(&hello, o.timeout_ms, &why)) return Fail(why);
  auto state = std::make_unique<TargetState>();
  if (!SetUp(o, hello, state.get(), &ready, &why)) {
    Message err("ERR");
    err.text = why;
    std::string ignored;
    ch.Send(err, &ignored);
    return Fail(why);
  }
  if (!ch.Send(ready, &why)) return Fail(why);
  // Transfers are one-sided: between commands the engine's and the ucp
  // baseline's progress threads and the tcp baseline's server thread do the
  // target's work; this thread only waits here.
  for (bool bye = false; !bye;) {
    Message m;
    bool eof = false;
    if (!ch.Receive(&m, 24 * 3600 * 1000, &why, &eof)) {
      return Fail(eof ? "the initiator went away without BYE" : why);
    }
    if (!Serve(ch, m, *state, &bye, &why)) return Fail(why);
  }
  return 0;
}

}  // namespace bench
