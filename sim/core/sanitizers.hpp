// Whether this build runs under AddressSanitizer (PODSIM_ASAN: 1 or 0), as GCC says it
// (__SANITIZE_ADDRESS__) and as clang 14 does (__has_feature only). Code that stands aside
// for it (crash handlers, memory left for the process's exit) asks here.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define PODSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PODSIM_ASAN 1
#endif
#endif
#ifndef PODSIM_ASAN
#define PODSIM_ASAN 0
#endif
