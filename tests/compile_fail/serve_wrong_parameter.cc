// expect: fn must take weft::Connection<In>&
#include <weft/weft.h>

void start(weft::Channel& ch) {
  weft::serve<weft::ByteBuf>(ch, [](weft::Connection<std::string>&) -> weft::Task<> { co_return; });
}
