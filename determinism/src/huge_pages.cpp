// huge_alloc: big buffers as 2 MiB-aligned anonymous mappings advised MADV_HUGEPAGE, and the
// AnonHugePages the kernel granted them (/proc/self/smaps). Placement only, never values.
#include "samebits/det/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <sstream>

namespace sb::det {

namespace {

size_t round_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

// The live mappings (start → bytes), for huge_page_stats.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, size_t> live;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: buffers may outlive static destruction
  return *r;
}

}  // namespace

void* huge_alloc(size_t bytes) {
  if (!huge_mapping(bytes)) {
    void* p = std::aligned_alloc(kHeapAlignment, round_up(bytes == 0 ? 1 : bytes, kHeapAlignment));
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  const size_t size = round_up(bytes, kHugePageBytes);
  // Over-map by one huge page and trim both ends to a 2 MiB-aligned range.
  void* raw = mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start, kHugePageBytes);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + size + kHugePageBytes;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  void* p = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  madvise(p, size, MADV_HUGEPAGE);  // advice only: without THP the buffer is ordinary pages
#endif
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.live[aligned] = size;
  return p;
}

void huge_free(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (!huge_mapping(bytes)) {
    std::free(p);
    return;
  }
  const size_t size = round_up(bytes, kHugePageBytes);
  {
    Registry& r = registry();
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.live.erase(reinterpret_cast<uintptr_t>(p));
  }
  munmap(p, size);
}

HugePageStats huge_page_stats() {
  HugePageStats s;
  std::map<uintptr_t, size_t> live;
  {
    Registry& r = registry();
    const std::lock_guard<std::mutex> lock(r.mutex);
    live = r.live;
  }
  for (const auto& [start, size] : live) s.mapped_bytes += size;
  // smaps: a header "start-end perms ..." per mapping, then "Name: value kB" lines. A buffer may
  // share a mapping with a neighbour (the kernel merges adjacent ones): count a mapping's
  // AnonHugePages when it lies inside the union of live buffers' ranges or contains one.
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool ours = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      ours = false;
      const auto it = live.upper_bound(static_cast<uintptr_t>(hi - 1));
      if (it != live.begin()) {
        const auto& [start, size] = *std::prev(it);
        ours = start < hi && start + size > lo;
      }
      continue;
    }
    size_t kb = 0;
    if (ours && std::sscanf(line.c_str(), "AnonHugePages: %zu kB", &kb) == 1) s.granted_bytes += kb * 1024;
  }
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(thp, modes);
  const size_t a = modes.find('['), b = modes.find(']');
  s.thp_mode = a != std::string::npos && b > a ? modes.substr(a + 1, b - a - 1) : "unknown";
  return s;
}

std::string huge_page_text() {
  const HugePageStats s = huge_page_stats();
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(2);
  os << "huge pages: " << static_cast<double>(s.granted_bytes) / (1 << 30) << " of "
     << static_cast<double>(s.mapped_bytes) / (1 << 30)
     << " GiB of the big host buffers (AnonHugePages; transparent_hugepage " << s.thp_mode << ")";
  return os.str();
}

}  // namespace sb::det
