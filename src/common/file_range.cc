#include "geofs/file_range.h"

#include <unistd.h>

#include <cerrno>

namespace geofs {

void AppendFileRange(const FileRange& range, std::vector<uint8_t>& out) {
  const size_t start = out.size();
  out.resize(start + range.length, 0);
  uint64_t done = 0;
  while (done < range.length) {
    ssize_t n = ::pread(range.fd, out.data() + start + done, range.length - done,
                        static_cast<off_t>(range.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file or an error: the rest stays zero, as sent
    done += static_cast<uint64_t>(n);
  }
}

}  // namespace geofs
