// rank_setup.hpp: the launch plan of this process (its rank, local rank and the devices it sees)
// picks the device; the backend is built on it and the communicator follows the backend.
#include "samebits/core/train/rank_setup.hpp"

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/parallel/launch.hpp"
#include "samebits/det/error.hpp"

#ifdef SB_HAVE_CUDA
#include "samebits/core/cuda/cuda_backend.hpp"
#endif

namespace sb {
namespace {

// Devices of run.backend's kind this process sees (1 for the CPU). Throws sb::Error for cuda in a
// build without CUDA.
int device_count(const Config& config) {
  if (config.run.backend == Device::cpu) return 1;
#ifdef SB_HAVE_CUDA
  return cuda_device_count();
#else
  SB_FAIL(
      "config run.backend=cuda: this samebits was built without CUDA (build the cuda preset, or use "
      "run.backend=cpu)");
#endif
}

}  // namespace

std::unique_ptr<Backend> make_backend(const Config& config, [[maybe_unused]] int device) {
  if (config.run.backend == Device::cpu) return make_cpu_backend(to_numerics(config));
#ifdef SB_HAVE_CUDA
  return make_cuda_backend(to_numerics(config), device);
#else
  SB_FAIL("config run.backend=cuda: this samebits was built without CUDA");
#endif
}

RankSetup make_rank_setup(const Config& config) {
  const CommunicatorPlan plan =
      plan_communicator(config.run.backend, read_launch_environment(), device_count(config), -1);
  RankSetup setup;
  setup.backend = make_backend(config, plan.device);
  setup.comm = make_planned_communicator(plan, *setup.backend);
  return setup;
}

}  // namespace sb
