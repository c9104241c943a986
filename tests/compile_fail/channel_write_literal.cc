// expect: a string literal is not a message
#include <weft/weft.h>

void greet(weft::Channel& ch) { ch.write("hello"); }
