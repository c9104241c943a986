#include "weft/version.h"

namespace weft {

const char* version() noexcept { return WEFT_VERSION_STRING; }

}  // namespace weft
