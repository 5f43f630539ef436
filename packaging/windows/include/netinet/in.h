/* The Windows build's <netinet/in.h> (scripts/build-windows.sh): the same declarations come from
 * Winsock there, so the network code includes the POSIX names on both systems. */
#include <winsock2.h>
#include <ws2tcpip.h>
