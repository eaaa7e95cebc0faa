#include <algorithm>

#include "geofs/vfs.h"

namespace geofs::vfs {

bool Credentials::InGroup(uint32_t g) const {
  return g == gid || std::find(groups.begin(), groups.end(), g) != groups.end();
}

}  // namespace geofs::vfs
