// h5.hpp: links handled by name only. The run file's external links into its store are for h5py
// users; samebits never traverses a link it did not create, so these calls only test, create and
// delete link names (H5Lexists / H5Lget_info walk the path one hard link at a time).
#include <vector>

#include "h5_detail.hpp"
#include "samebits/det/error.hpp"

namespace sb::h5 {

using namespace detail;

bool Group::has_link(std::string_view name) const {
  require_open();
  std::string prefix;
  const std::string path(name);
  std::size_t at = 0;
  while (at <= path.size()) {
    const std::size_t slash = path.find('/', at);
    const std::size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > at) {
      if (!prefix.empty()) {  // the parent must be a hard link (to a group) before we descend
        H5L_info_t info;
        if (H5Lget_info(id(), prefix.c_str(), &info, H5P_DEFAULT) < 0 || info.type != H5L_TYPE_HARD) {
          H5Eclear2(H5E_DEFAULT);
          return false;
        }
      }
      prefix += (prefix.empty() ? "" : "/") + path.substr(at, end - at);
      if (H5Lexists(id(), prefix.c_str(), H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return false;
      }
    }
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  return !prefix.empty();
}

void Group::link_external(std::string_view name, const std::string& target_file, const std::string& target_object) {
  require_open();
  const std::string full = child_path(name);
  SB_CHECK(!has_link(name), file_, ":", full, ": already exists");
  // The parent made as create_group makes it (compact link storage), not as an intermediate group.
  const std::size_t slash = name.rfind('/');
  if (slash != std::string_view::npos && slash > 0) require_group(name.substr(0, slash));
  check_status(H5Lcreate_external(target_file.c_str(), target_object.c_str(), id(), std::string(name).c_str(),
                                  H5P_DEFAULT, H5P_DEFAULT),
               file_ + ":" + full, "cannot create the external link to " + target_file + ":" + target_object);
}

bool Group::is_external_link(std::string_view name, const std::string& target_file,
                             const std::string& target_object) const {
  if (!has_link(name)) return false;
  const std::string path(name);
  H5L_info_t info;
  if (H5Lget_info(id(), path.c_str(), &info, H5P_DEFAULT) < 0 || info.type != H5L_TYPE_EXTERNAL ||
      info.u.val_size == 0 || info.u.val_size > 65536) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  std::vector<char> value(info.u.val_size);
  const char* file = nullptr;
  const char* object = nullptr;
  unsigned flags = 0;
  if (H5Lget_val(id(), path.c_str(), value.data(), value.size(), H5P_DEFAULT) < 0 ||
      H5Lunpack_elink_val(value.data(), value.size(), &flags, &file, &object) < 0 || file == nullptr ||
      object == nullptr) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return target_file == file && target_object == object;
}

void Group::remove_link(std::string_view name) {
  require_open();
  SB_CHECK(has_link(name), file_, ":", child_path(name), ": no such link to remove");
  check_status(H5Ldelete(id(), std::string(name).c_str(), H5P_DEFAULT), file_ + ":" + child_path(name),
               "cannot remove the link");
}

}  // namespace sb::h5
