// dcgym.cpp_core._engine: the private compiled module. Public names live in
// dcgym/cpp_core/__init__.py.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void BindKernel(py::module_& m);
void BindRack(py::module_& m);
void BindLb(py::module_& m);
void BindRuntime(py::module_& m);
void BindController(py::module_& m);
void BindColo(py::module_& m);
void BindFlow(py::module_& m);

PYBIND11_MODULE(_engine, m) {
  m.doc() = "dcgym's C++ discrete-event engine (private; use dcgym.cpp_core).";
  BindKernel(m);
  BindRack(m);
  BindLb(m);
  BindRuntime(m);
  BindController(m);
  BindColo(m);
  BindFlow(m);
}
