// The oracle exporters' HDF5 writer (optim_oracle_export, tp_oracle_export): groups with f32 /
// f64 datasets and scalar attributes (a minimal writer; the run store of core/io formalises the
// format), and their seeded inputs.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "samebits/core/optim/ns_coefficients.hpp"
#include "samebits/det/error.hpp"

namespace sb::oracle {

inline hid_t checked(hid_t id, const std::string& what) {
  SB_CHECK(id >= 0, "HDF5: ", what, " failed");
  return id;
}

class Group {
 public:
  Group(hid_t parent, const std::string& path) {
    const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    id_ = checked(H5Gcreate2(parent, path.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT), "group " + path);
    H5Pclose(lcpl);
  }
  ~Group() { H5Gclose(id_); }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  template <class T>
  void data(const std::string& name, const std::vector<T>& v, std::vector<hsize_t> dims) const {
    const hid_t type = std::is_same_v<T, float> ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
    const hid_t space = checked(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), name);
    const hid_t set = checked(H5Dcreate2(id_, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);
    checked(H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), "write " + name);
    H5Dclose(set);
    H5Sclose(space);
  }
  void attr(const char* name, double value) const {
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = checked(H5Acreate2(id_, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT), name);
    checked(H5Awrite(a, H5T_NATIVE_DOUBLE, &value), name);
    H5Aclose(a);
    H5Sclose(space);
  }
  void attr(const char* name, const std::string& value) const {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, value.size());
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = checked(H5Acreate2(id_, name, type, space, H5P_DEFAULT, H5P_DEFAULT), name);
    checked(H5Awrite(a, type, value.data()), name);
    H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
  }

 private:
  hid_t id_;
};

inline std::vector<float> normal(size_t n, uint32_t seed, float std) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, std);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<double> ns_table(const std::vector<NsStep>& steps) {
  std::vector<double> t;
  for (const NsStep& s : steps) t.insert(t.end(), {s.a, s.b, s.c});
  return t;
}

}  // namespace sb::oracle
