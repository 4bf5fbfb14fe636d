// The bindings' calls that fill an out-parameter: WithOut(out, call) runs
// call(out) with the GIL released (the C++ call may block on the network or
// on a peer) and returns (status, out), built for Python once the GIL is
// held again.  One helper for the three modules, so that each such binding
// is one line instead of the same seven.
#ifndef ADXL_PYTHON_SRC_RELEASED_H_
#define ADXL_PYTHON_SRC_RELEASED_H_

#include <pybind11/pybind11.h>

#include <tuple>
#include <utility>

template <typename Out, typename Call>
auto WithOut(Out out, Call call) {
  decltype(call(out)) s;
  {
    pybind11::gil_scoped_release nogil;
    s = call(out);
  }
  return std::make_tuple(s, std::move(out));
}

#endif  // ADXL_PYTHON_SRC_RELEASED_H_
