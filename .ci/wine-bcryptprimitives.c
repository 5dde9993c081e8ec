/* Rust's standard library imports ProcessPrng from bcryptprimitives.dll (Windows 10 and
 * later); Wine 8 lacks that DLL. .ci/windows builds this stand-in with mingw-w64 and puts it
 * in the Wine prefix's system32, so Rust programs start under Wine. Test-only: never shipped. */
#include <windows.h>
#include <ntsecapi.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    return RtlGenRandom(data, (ULONG)len);
}
