// expect: a string literal is not a message
#include <weft/weft.h>

void greet(weft::Context& ctx, const char* text) { ctx.write_and_flush(text); }
