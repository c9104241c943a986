#pragma once
/// @file
/// Compile-time checks on what is written to a channel, so that a common mistake fails to compile
/// with a message that names the fix (Context::write and Channel::write call them).

#include <type_traits>

namespace weft::detail {

// A string literal, a char array or a char pointer: bytes without an owner, which no handler takes
// as a message (they would reach the pipeline head as an unknown type at run time).
template <class T>
inline constexpr bool is_c_string_v =
    std::is_same_v<std::remove_cv_t<std::remove_extent_t<std::remove_cvref_t<T>>>, char> ||
    (std::is_pointer_v<std::decay_t<T>> && std::is_same_v<std::remove_cv_t<std::remove_pointer_t<std::decay_t<T>>>, char>);

// `static_assert(WrittenMessageCheck<T>::ok)` reports the mistake before anything else does:
// the class is instantiated, and its assertion checked, right where it is named.
template <class T>
struct WrittenMessageCheck {
  static_assert(!is_c_string_v<T>,
                "write(\"...\"): a string literal is not a message; pass an owned message the next handler takes: "
                "ByteBuf::copy_of(\"...\") for bytes, std::string(\"...\") for a StringEncoder, "
                "http::HttpResponse(200).body_view(\"...\") for the HTTP codec");
  static constexpr bool ok = true;
};

}  // namespace weft::detail
