// LaunchPlan: one kernel's launch with everything fixed but a few argument values, called
// from Python through vectorcall so a hot op pays no pybind11 argument loading per launch.
#pragma once

#include <Python.h>

#include <memory>
#include <string>
#include <vector>

#include "context.hpp"
#include "launch.hpp"

namespace pgk {

// Where one per-call value goes in the packed parameters, and how it is written:
// 'P' a device pointer (an int), or a struct-module code of a scalar: ? b B h H i I q Q f d.
struct PlanSlot {
    size_t offset;
    char code;
};

struct LaunchPlanSpec {
    std::shared_ptr<Context> context;
    CUfunction func = nullptr;
    Dim3 grid, block;
    unsigned shared_bytes = 0;
    std::string params;  // the packed parameters with every slot's bytes still zero
    std::vector<PlanSlot> slots;
};

// Makes the LaunchPlan type; `translate` turns the C++ exception being handled into a
// Python error (the module's CudaError, CudaContextLostError, ...). Call once at import.
PyTypeObject* make_launch_plan_type(void (*translate)());

// A new LaunchPlan object: calling it as plan(stream, *values) packs one value per slot into
// a copy of the parameters and launches on `stream`. Throws std::invalid_argument for a
// slot that does not fit in the parameters or an unknown code.
PyObject* new_launch_plan(PyTypeObject* type, LaunchPlanSpec spec);

// The spec a LaunchPlan object holds (alive as long as the object); nullptr when `obj` is
// not a LaunchPlan.
const LaunchPlanSpec* launch_plan_spec(PyObject* obj);

}  // namespace pgk
