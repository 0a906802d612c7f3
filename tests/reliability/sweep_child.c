/* Child processes for isolated sweep rows (sweep_child.h). */
#include "sweep_child.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "failing_alloc.h"

static int report_descriptor = -1;
static const char *own_executable = "";

/* A death report, sent before anything risky and again refined: the parent keeps the last. */
typedef struct death_message_t {
    char tag; /* 'D' */
    sweep_death_t death;
} death_message_t;

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void write_all(int descriptor, const void *bytes, size_t size) {
    const char *at = bytes;
    while (size) {
        ssize_t wrote = write(descriptor, at, size);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return;
        at += wrote, size -= (size_t)wrote;
    }
}

static int parse_hex(const char **text, unsigned long *value) {
    *value = 0;
    int digits = 0;
    for (;; ++*text, ++digits) {
        char c = **text;
        int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (digit < 0) return digits > 0;
        *value = *value << 4 | (unsigned long)digit;
    }
}

/* The file mapped at `address`, from /proc/self/maps with open/read only (async-signal-safe). */
static void mapping_of(unsigned long address, char *library, size_t capacity) {
    snprintf(library, capacity, "?");
    int descriptor = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return;
    char buffer[8192], line[1024];
    size_t used = 0;
    for (ssize_t got; (got = read(descriptor, buffer, sizeof buffer)) > 0;) {
        for (ssize_t i = 0; i < got; ++i) {
            if (buffer[i] != '\n') {
                if (used + 1 < sizeof line) line[used++] = buffer[i];
                continue;
            }
            line[used] = 0;
            used = 0;
            const char *text = line;
            unsigned long start, end;
            if (!parse_hex(&text, &start) || *text++ != '-' || !parse_hex(&text, &end)) continue;
            if (address < start || address >= end) continue;
            const char *path = strchr(line, '/');
            snprintf(library, capacity, "%s", path ? base_name(path) : "(anonymous memory)");
            close(descriptor);
            return;
        }
    }
    close(descriptor);
}

/* UForm's code: the test executable (libuform is linked into it) and the collectives module
 * (libuform-gloo.so.4, the C++ shim the mesh loads). */
static int is_ours(const char *library) {
    return !strcmp(library, base_name(own_executable)) || !strncmp(library, "libuform", 8);
}

static int is_system_runtime(const char *library) {
    return !strncmp(library, "libc.so", 7) || !strncmp(library, "ld-linux", 8);
}

/* Fills what is safe to know about where the child is: the mapping of `address`. */
static void locate(unsigned long address, int signal_number, sweep_death_t *death) {
    memset(death, 0, sizeof *death);
    death->signal_number = signal_number;
    snprintf(death->failed, sizeof death->failed, "%s", failing_alloc_failed_function());
    snprintf(death->symbol, sizeof death->symbol, "?");
    mapping_of(address, death->library, sizeof death->library);
    death->ours = is_ours(death->library);
}

static void send_death(const sweep_death_t *death) {
    death_message_t message;
    memset(&message, 0, sizeof message);
    message.tag = 'D';
    message.death = *death;
    write_all(report_descriptor, &message, sizeof message);
}

/* A crash: report the faulting instruction's mapping at once. When it is the C library or the
 * loader (a bad free, an abort), walk the stack to the first caller outside them — a walk that
 * may need locks the crash left taken, so the watchdog bounds it to two seconds. */
static void on_crash(int signal_number, siginfo_t *info, void *context) {
    signal(SIGALRM, SIG_DFL);
    alarm(2);
    unsigned long fault = (unsigned long)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
    sweep_death_t death;
    locate(fault, signal_number, &death);
    if (!strcmp(death.library, "?")) { /* a jump to nowhere (a NULL function pointer): blame its caller */
        unsigned long return_address = *(const unsigned long *)((ucontext_t *)context)->uc_mcontext.gregs[REG_RSP];
        locate(return_address, signal_number, &death);
    }
    send_death(&death);
    if (is_system_runtime(death.library)) {
        static const char *const allocator[] = {"malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc",
                                                "memalign", "valloc", "mmap", "mmap64", "pthread_create"};
        void *frames[64];
        int depth = backtrace(frames, 64), start = 0;
        for (int i = 0; i < depth; ++i)
            if ((unsigned long)frames[i] == fault) {
                start = i;
                break;
            }
        for (int i = start; i < depth; ++i) {
            Dl_info where;
            if (!dladdr(frames[i], &where) || !where.dli_fname) continue;
            const char *library = base_name(where.dli_fname);
            if (is_system_runtime(library)) continue;
            int in_allocator = 0;
            for (size_t a = 0; where.dli_sname && a < sizeof allocator / sizeof allocator[0]; ++a)
                in_allocator |= !strcmp(where.dli_sname, allocator[a]);
            if (in_allocator) continue;
            snprintf(death.library, sizeof death.library, "%s", library);
            snprintf(death.symbol, sizeof death.symbol, "%s", where.dli_sname ? where.dli_sname : "?");
            death.ours = is_ours(library);
            send_death(&death);
            break;
        }
    }
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

/* The watchdog: report where the run was looping, then die of it. */
static void on_watchdog(int signal_number, siginfo_t *info, void *context) {
    unsigned long where = (unsigned long)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
    sweep_death_t death;
    locate(where, signal_number, &death);
    send_death(&death);
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

/* A library that calls exit in the middle of a run (libgomp on a failed allocation) leaves what the
 * run had allocated unfreed by design: LeakSanitizer's check at that exit would only symbolize those
 * blocks (most of an isolated row's time under ASan) for a verdict the parent already gives from
 * the status. Registered after the sanitizer's own handler, this one runs first and skips it; a run
 * that returns reaches exit(0) with `finished` set, and the leak check runs. */
static volatile sig_atomic_t finished;

static void on_early_exit(int status, void *unused) {
    (void)unused;
    if (!finished) _exit(status);
}

void sweep_child_watchdog(unsigned seconds) { alarm(seconds); }

void sweep_child_send(int descriptor, const sweep_record_t *record) { write_all(descriptor, record, sizeof *record); }

void sweep_child_run(void (*work)(void *context, int descriptor), void *context, const char *executable,
                     sweep_child_result_t *result) {
    memset(result, 0, sizeof *result);
    int channel[2];
    if (pipe(channel) != 0) {
        perror("pipe");
        exit(1);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        exit(1);
    }
    if (child == 0) {
        close(channel[0]);
        report_descriptor = channel[1];
        own_executable = executable;
        /* Its own stack: a library recursing without end under failing allocations (GLib's g_error
         * logging its own failure) dies of a stack overflow, and the report must still run. */
        static char alternate[1 << 16];
        stack_t stack = {.ss_sp = alternate, .ss_size = sizeof alternate, .ss_flags = 0};
        sigaltstack(&stack, NULL);
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = on_crash;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        int signals[6] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTRAP};
        for (int i = 0; i < 6; ++i) sigaction(signals[i], &action, NULL);
        action.sa_sigaction = on_watchdog;
        sigaction(SIGALRM, &action, NULL);
        on_exit(on_early_exit, NULL);
        work(context, channel[1]);
        finished = 1;
        close(channel[1]);
        exit(0); /* not _exit: LeakSanitizer's check runs at exit */
    }
    close(channel[1]);
    /* Records of two sizes share the pipe; each starts with its tag. */
    for (;;) {
        char tag;
        ssize_t got = read(channel[0], &tag, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        size_t size = tag == 'D' ? sizeof(death_message_t) : sizeof(sweep_record_t);
        union {
            death_message_t death;
            sweep_record_t record;
        } message;
        memset(&message, 0, sizeof message);
        ((char *)&message)[0] = tag;
        size_t have = 1;
        while (have < size) {
            ssize_t more = read(channel[0], (char *)&message + have, size - have);
            if (more < 0 && errno == EINTR) continue;
            if (more <= 0) break;
            have += (size_t)more;
        }
        if (have < size) break;
        if (tag == 'D') {
            result->death = message.death.death;
        } else {
            result->progress = message.record;
            result->have_progress = 1;
        }
    }
    close(channel[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) {
        result->died = 1;
        if (!result->death.signal_number) { /* killed before it could say where */
            result->death.signal_number = WTERMSIG(status);
            snprintf(result->death.library, sizeof result->death.library, "?");
            snprintf(result->death.symbol, sizeof result->death.symbol, "?");
        }
    } else {
        result->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        result->finished = result->exit_status == 0;
    }
}
