/* An LD_PRELOAD shim for testing Janus on a machine (or network namespace) whose only interface is
 * loopback: Janus skips interfaces flagged IFF_LOOPBACK when it gathers ICE candidates, so a call that
 * never leaves the machine would have none. This getifaddrs clears the flag. Test use only.
 * Build: cc -shared -fPIC -O2 -o unloopback.so unloopback.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stddef.h>

int getifaddrs(struct ifaddrs **list) {
    int (*real)(struct ifaddrs **) = (int (*)(struct ifaddrs **))dlsym(RTLD_NEXT, "getifaddrs");
    int result = real(list);
    if (result == 0) {
        for (struct ifaddrs *entry = *list; entry != NULL; entry = entry->ifa_next) entry->ifa_flags &= ~IFF_LOOPBACK;
    }
    return result;
}
