// Fault-injection seams of the UCX plugin: delays with which a test opens a
// window at a known point (a peer killed while the initiator sits in a
// handler, an endpoint teardown seen in progress, a progress thread
// preempted between two passes).
//
// They exist in the test build's plugin only: libadxl_plugin_ucx_faults.so
// (plugin/ucx/CMakeLists.txt; fault_injection.cc compiled with
// ADXL_UCX_FAULT_INJECTION=1, not installed).  In the plugin that is
// installed, ParseFaultParam knows no key (the "test_*" parameters are
// ignored as every unknown key is) and FaultDelay does nothing.
#ifndef ADXL_PLUGIN_UCX_CORE_FAULT_INJECTION_H_
#define ADXL_PLUGIN_UCX_CORE_FAULT_INJECTION_H_

struct FaultInjection {
  // "test_read_data_delay_us": the RDMA lane's initiator waits this long in
  // its READ-data handler before posting the receive, so that a test can
  // kill the target and UCP fails the receive inside the posting call
  // (tests/plugin_conformance, PeerDeathBetweenReadRequestAndItsData).
  unsigned read_data_delay_us = 0;
  // "test_write_accept_delay_us": the RDMA lane's target waits this long in
  // its WRITE handler between finding the message's memory registered and
  // taking the data, so that a test deregisters that memory meanwhile
  // (tests/plugin_conformance, MemDeregWaitsForAWriteAlreadyAccepted).
  unsigned write_accept_delay_us = 0;
  // "test_ep_destroy_delay_us": ep_destroy waits this long first, so that a
  // test sees an endpoint teardown in progress (tests/unit/transport_test.cc).
  unsigned ep_destroy_delay_us = 0;
  // "test_progress_pause_us": the progress thread pauses this long after
  // each pass over the workers that reported events, as a thread preempted
  // there by a busy machine would, so that a test sees whether it still
  // drains the workers before it sleeps (tests/plugin_conformance,
  // PeersCompleteWhenTheProgressThreadIsPreemptedAfterEvents).
  unsigned progress_pause_us = 0;
  // "test_hccs_piece_delay_us": the HCCS lane's copies (cma and the direct
  // mapping) wait this long before each piece they copy (1 MiB at most,
  // hccs/copy_stop.h), a copy a loaded machine slows down, so that a test
  // cancels an endpoint in the middle of a post's copy
  // (tests/unit/same_node_cancel_test.cc).
  unsigned hccs_piece_delay_us = 0;
  // "test_own_delay_us": an owner of a UCP endpoint waits this long between
  // ucp_ep_create and entering it in the owned-endpoint table
  // (core/owned_endpoints.h), so that a test deregisters memory meanwhile
  // (tests/plugin_conformance, MemDeregWhileAnEndpointIsMadeClosesItAsItsOwners).
  unsigned own_delay_us = 0;
  // "test_foreign_pump_delay_us": the RDMA lane's AM transport, sending the
  // next message of its window, waits this long between taking it and
  // handing it to UCP when the message is not of the endpoint the calling
  // thread posts on (a post, an endpoint's teardown or a callback sending
  // another endpoint's message), so that a test tears that endpoint down
  // meanwhile (tests/plugin_conformance,
  // ATeardownWaitsForAMessageAnotherThreadIsHandingToUcp).
  unsigned foreign_pump_delay_us = 0;
};

// True when `key` is a fault-injection parameter of this build; its value
// is then parsed into *f.  Always false in the production plugin.
bool ParseFaultParam(const char *key, const char *value, FaultInjection *f);

// A seam: waits `us` microseconds in the test build, nothing otherwise.
void FaultDelay(unsigned us);

#endif  // ADXL_PLUGIN_UCX_CORE_FAULT_INJECTION_H_
