// The op overrides of a backend class, declared from the one list (backend_op_list.hpp): included
// once in the body of each class that implements every op (CpuBackend and CudaBackend, which
// define each op in its own file core/cpu/X.cpp, core/cuda/X.cu; ForwardingBackend and
// TracingBackend, which define them from the same list). No include guard: one use per class.
#define SB_BACKEND_OP(name, params, ...) void name params override;
#include "samebits/core/backend_op_list.hpp"
