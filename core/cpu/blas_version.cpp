// blas_version.hpp: openblas_get_config() of the library loaded at run time.
#include "samebits/core/cpu/blas_version.hpp"

#include <cblas.h>

namespace sb {

std::string blas_version() {
  const char* config = openblas_get_config();
  return config != nullptr ? config : "unknown";
}

}  // namespace sb
