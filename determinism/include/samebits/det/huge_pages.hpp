// Host buffers in transparent huge pages: a buffer of at least 2 MiB is a fresh anonymous mapping,
// 2 MiB-aligned, advised MADV_HUGEPAGE before anything touches it (machines whose
// transparent_hugepage setting is "madvise" grant huge pages to such mappings only), so that its
// first touch costs one page fault per 2 MiB instead of one per 4 KiB. Smaller buffers come from
// the heap, 64-byte aligned. Memory placement only: no value depends on it.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <string>

namespace sb::det {

inline constexpr size_t kHugePageBytes = size_t{1} << 21;
inline constexpr size_t kHeapAlignment = 64;

// `bytes` (> 0) of host memory, at least kHeapAlignment-aligned. Buffers of kHugePageBytes or
// more are zero (fresh pages, not yet touched) and 2 MiB-aligned; smaller ones hold garbage.
// Throws std::bad_alloc. Free with huge_free(p, bytes) (the same bytes).
void* huge_alloc(size_t bytes);
void huge_free(void* p, size_t bytes) noexcept;
// Whether huge_alloc(bytes) returns a fresh zero mapping (bytes >= kHugePageBytes).
inline bool huge_mapping(size_t bytes) { return bytes >= kHugePageBytes; }

// The live huge_alloc mappings of this process and how much of them the kernel backs with huge
// pages now (AnonHugePages of those mappings in /proc/self/smaps; 0 where it cannot be read).
struct HugePageStats {
  size_t mapped_bytes = 0;   // live mappings of huge_alloc, bytes
  size_t granted_bytes = 0;  // of them, in huge pages
  std::string thp_mode;      // /sys/kernel/mm/transparent_hugepage/enabled's selected word, or "unknown"
};
HugePageStats huge_page_stats();
// "huge pages: 3.41 of 3.52 GiB of the big host buffers (AnonHugePages; transparent_hugepage madvise)".
std::string huge_page_text();

// A std::vector allocator over huge_alloc (for large integer buffers below the backend's tensors).
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(huge_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { huge_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

}  // namespace sb::det
