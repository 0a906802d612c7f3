/* NUMA topology from sysfs and placement through mbind (numa.h). */
#include "core/numa.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NODE_ROOT "/sys/devices/system/node"

/* The memory policies of <linux/mempolicy.h>, spelled here so that no header beyond the C library
 * is needed. */
enum { policy_bind = 2, policy_preferred_many = 5 };

/* Reads a small sysfs file into `buffer` (NUL-terminated); answers its length or -1. */
static long read_small(const char *path, char *buffer, size_t capacity) {
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return -1;
    size_t used = 0;
    while (used + 1 < capacity) {
        ssize_t got = read(descriptor, buffer + used, capacity - 1 - used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        used += (size_t)got;
    }
    close(descriptor);
    buffer[used] = 0;
    return (long)used;
}

/* Calls `visit(number, state)` for every number of a sysfs list such as "0-3,8,10-11". Answers 0,
 * or -1 for text that is not such a list. */
static int for_each_in_list(const char *text, void (*visit)(size_t, void *), void *state) {
    const char *at = text;
    while (*at && *at != '\n') {
        if (*at < '0' || *at > '9') return -1;
        size_t first = 0, last;
        while (*at >= '0' && *at <= '9') first = first * 10 + (size_t)(*at++ - '0');
        last = first;
        if (*at == '-') {
            ++at;
            if (*at < '0' || *at > '9') return -1;
            last = 0;
            while (*at >= '0' && *at <= '9') last = last * 10 + (size_t)(*at++ - '0');
        }
        for (size_t number = first; number <= last && number < 1u << 20; ++number) visit(number, state);
        if (*at == ',') ++at;
    }
    return 0;
}

static void keep_largest(size_t number, void *state) {
    int *largest = state;
    if ((int)number > *largest) *largest = (int)number;
}

int uform__numa_max_node(void) {
    char text[256];
    int largest = 0;
    if (read_small(NODE_ROOT "/online", text, sizeof text) > 0) for_each_in_list(text, keep_largest, &largest);
    return largest;
}

int uform__numa_node_online(size_t node) {
    if (node == 0) return 1;
    char path[96];
    snprintf(path, sizeof path, NODE_ROOT "/node%zu", node);
    return access(path, F_OK) == 0;
}

static void add_cpu(size_t cpu, void *state) {
    if (cpu < CPU_SETSIZE) CPU_SET(cpu, (cpu_set_t *)state);
}

int uform__numa_node_cpus(size_t node, cpu_set_t *cpus) {
    char path[96], text[4096];
    snprintf(path, sizeof path, NODE_ROOT "/node%zu/cpulist", node);
    if (read_small(path, text, sizeof text) < 0) {
        if (node != 0 || access(NODE_ROOT, F_OK) == 0) return -1;
        for (size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, cpus); /* no NUMA information: one node */
        return 0;
    }
    return for_each_in_list(text, add_cpu, cpus);
}

void uform__numa_place(void *pages, size_t bytes, unsigned long node_mask) {
    if (!node_mask) return;
    /* The kernel reads maxnode − 1 bits of the mask. */
    unsigned long bits = sizeof node_mask * 8 + 1;
    if (syscall(SYS_mbind, pages, bytes, policy_preferred_many, &node_mask, bits, 0) != 0)
        (void)syscall(SYS_mbind, pages, bytes, policy_bind, &node_mask, bits, 0);
}
