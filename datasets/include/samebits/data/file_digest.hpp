// The content digest of a data file (XXH3-64 of every byte, seed 0) and its size, for the run's
// data provenance (data_manifest.hpp). Digests are cached by file identity (path, device, inode,
// size, mtime and ctime in ns) so that a start over gigabytes of shards hashes only what changed
// since it was last hashed (docs/FORMAT.md "Data provenance": the cache, its location, the cost).
#pragma once
#include <cstdint>
#include <string>

namespace sb::data {

struct FileDigest {
  uint64_t bytes = 0;
  uint64_t digest = 0;  // XXH3_64bits of the file's content
  bool cached = false;  // taken from the cache (the file is unchanged since it was hashed)
};

// The file's size and digest; an sb::Error naming the file when it cannot be read. The cache is
// the file $SB_DIGEST_CACHE ("off": none), else $XDG_CACHE_HOME/samebits/file_digests.tsv, else
// ~/.cache/samebits/file_digests.tsv; a cache that cannot be read or written is ignored.
FileDigest file_digest(const std::string& path);

// The same without the cache: reads the whole file.
FileDigest hash_file(const std::string& path);

}  // namespace sb::data
