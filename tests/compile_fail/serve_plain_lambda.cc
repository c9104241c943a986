// expect: fn must return weft::Task<>: make it a coroutine
#include <weft/weft.h>

void start(weft::Channel& ch) {
  weft::serve<weft::ByteBuf>(ch, [](weft::Connection<weft::ByteBuf>& c) { c.close(); });
}
