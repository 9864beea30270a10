// ForwardingBackend (forwarding_backend.hpp): every op passed to the inner backend unchanged (the
// ops of backend_op_list.hpp, one definition each from the list).
#include "samebits/core/forwarding_backend.hpp"

namespace sb {

void ForwardingBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  count_from_host(bytes);
  inner_.copy_from_host(dst, host_src, bytes);
}

void ForwardingBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  count_to_host(bytes);
  inner_.copy_to_host(host_dst, src, bytes);
}

#define SB_BACKEND_OP(name, params, args, ...) \
  void ForwardingBackend::name params { inner_.name args; }
#include "samebits/core/backend_op_list.hpp"

}  // namespace sb
