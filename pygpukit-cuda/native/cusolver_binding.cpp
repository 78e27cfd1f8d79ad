// Python binding of Cusolver (cusolver_api.hpp): `_native.Cusolver` and CusolverError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <utility>

#include "cusolver_api.hpp"

namespace py = pybind11;

namespace pgk {
namespace {

// A batch from Python: (device address, stride between matrices in elements).
Batch batch(const std::pair<uint64_t, int64_t>& b) { return Batch{b.first, b.second}; }

CUstream stream(uintptr_t handle) { return reinterpret_cast<CUstream>(handle); }

using Pair = std::pair<uint64_t, int64_t>;
using Ctx = std::shared_ptr<Context>;

}  // namespace

void bind_cusolver(py::module_& m) {
    py::register_exception<SolverError>(m, "CusolverError", PyExc_RuntimeError);
    py::class_<Cusolver, std::shared_ptr<Cusolver>>(m, "Cusolver")
        .def(py::init<const std::string&>(), py::arg("path"),
             "dlopen a libcusolver; CusolverError names the path and what failed.")
        .def_property_readonly("path", &Cusolver::path)
        .def_property_readonly("version", &Cusolver::version)
        .def("potrf_workspace",
             [](Cusolver& s, const Ctx& c, int dt, bool upper, int64_t n, Pair a) {
                 return s.potrf_workspace(*c, dt, upper, n, batch(a));
             })
        .def("potrf",
             [](Cusolver& s, const Ctx& c, uintptr_t st, int dt, bool upper, int64_t n, Pair a,
                int64_t count, uint64_t ws, size_t ws_bytes, uint64_t info) {
                 s.potrf(*c, stream(st), dt, upper, n, batch(a), count, ws, ws_bytes, info);
             })
        .def("potrf_batched",
             [](Cusolver& s, const Ctx& c, uintptr_t st, int dt, bool upper, int64_t n,
                uint64_t pointers, int64_t count, uint64_t info) {
                 s.potrf_batched(*c, stream(st), dt, upper, n, pointers, count, info);
             })
        .def("getrf_workspace",
             [](Cusolver& s, const Ctx& c, int dt, int64_t n, Pair a) {
                 return s.getrf_workspace(*c, dt, n, batch(a));
             })
        .def("getrf",
             [](Cusolver& s, const Ctx& c, uintptr_t st, int dt, int64_t n, Pair a, Pair ipiv,
                int64_t count, uint64_t ws, size_t ws_bytes, uint64_t info) {
                 s.getrf(*c, stream(st), dt, n, batch(a), batch(ipiv), count, ws, ws_bytes, info);
             })
        .def("getrs",
             [](Cusolver& s, const Ctx& c, uintptr_t st, int dt, int trans, int64_t n,
                int64_t nrhs, Pair a, Pair ipiv, Pair b, int64_t count, uint64_t info) {
                 s.getrs(*c, stream(st), dt, trans, n, nrhs, batch(a), batch(ipiv), batch(b),
                         count, info);
             })
        .def("syevd_workspace",
             [](Cusolver& s, const Ctx& c, int dt, bool vectors, bool upper, int64_t n, Pair a,
                Pair w) {
                 return s.syevd_workspace(*c, dt, vectors, upper, n, batch(a), batch(w));
             })
        .def("syevd",
             [](Cusolver& s, const Ctx& c, uintptr_t st, int dt, bool vectors, bool upper,
                int64_t n, Pair a, Pair w, int64_t count, uint64_t ws, size_t ws_bytes,
                uint64_t info) {
                 s.syevd(*c, stream(st), dt, vectors, upper, n, batch(a), batch(w), count, ws,
                         ws_bytes, info);
             })
        .def("geqrf_workspace",
             [](Cusolver& s, const Ctx& c, int dt, int64_t m, int64_t n, Pair a, Pair tau) {
                 return s.geqrf_workspace(*c, dt, m, n, batch(a), batch(tau));
             })
        .def("geqrf",
             [](Cusolver& s, const Ctx& c, uintptr_t st, int dt, int64_t m, int64_t n, Pair a,
                Pair tau, int64_t count, uint64_t ws, size_t ws_bytes, uint64_t info) {
                 s.geqrf(*c, stream(st), dt, m, n, batch(a), batch(tau), count, ws, ws_bytes,
                         info);
             })
        .def("orgqr_workspace",
             [](Cusolver& s, const Ctx& c, int dt, int64_t m, int64_t cols, int64_t k, Pair a,
                Pair tau) { return s.orgqr_workspace(*c, dt, m, cols, k, batch(a), batch(tau)); })
        .def("orgqr",
             [](Cusolver& s, const Ctx& c, uintptr_t st, int dt, int64_t m, int64_t cols,
                int64_t k, Pair a, Pair tau, int64_t count, uint64_t ws, size_t ws_bytes,
                uint64_t info) {
                 s.orgqr(*c, stream(st), dt, m, cols, k, batch(a), batch(tau), count, ws,
                         ws_bytes, info);
             })
        .def("gesvd_workspace",
             [](Cusolver& s, const Ctx& c, int dt, char job, int64_t m, int64_t n, Pair a,
                Pair sv, Pair u, Pair vt) {
                 return s.gesvd_workspace(*c, dt, static_cast<signed char>(job), m, n, batch(a),
                                          batch(sv), batch(u), batch(vt));
             })
        .def("gesvd",
             [](Cusolver& s, const Ctx& c, uintptr_t st, int dt, char job, int64_t m, int64_t n,
                Pair a, Pair sv, Pair u, Pair vt, int64_t count, uint64_t ws, size_t ws_bytes,
                uint64_t info) {
                 s.gesvd(*c, stream(st), dt, static_cast<signed char>(job), m, n, batch(a),
                         batch(sv), batch(u), batch(vt), count, ws, ws_bytes, info);
             });
}

}  // namespace pgk
