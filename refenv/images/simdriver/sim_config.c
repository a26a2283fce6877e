/* refenv simulated driver: reading the host profile, tracing, and a small JSON writer. */
#include "sim_config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sim_config g_config;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) {
        n = cap - 1;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static char *trim(char *s)
{
    char *end;
    while (*s && isspace((unsigned char)*s)) {
        s++;
    }
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) {
        *--end = '\0';
    }
    return s;
}

static int parse_int(const char *text, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    long long v;
    errno = 0;
    v = strtoll(text, &end, 0);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

/* A value copied into a fixed buffer must fit whole and be printable: a truncated or multi-line GPU
 * name would be a different GPU than the host asked for. */
static int set_text(char *dst, size_t cap, const char *value)
{
    const unsigned char *c;
    if (strlen(value) >= cap) {
        return -1;
    }
    for (c = (const unsigned char *)value; *c; c++) {
        if (*c < 0x20 || *c == 0x7f) {
            return -1;
        }
    }
    copy_str(dst, cap, value);
    return 0;
}

/* MAJOR.MINOR in decimal digits only: sscanf's %d would take signs, spaces and overflow silently. */
static int parse_cc(const char *text, int *major, int *minor)
{
    const char *dot = strchr(text, '.');
    char part[8];
    long long v;
    size_t n = dot ? (size_t)(dot - text) : 0;
    if (dot == NULL || n == 0 || n >= sizeof part || !isdigit((unsigned char)text[0]) ||
        !isdigit((unsigned char)dot[1])) {
        return -1;
    }
    memcpy(part, text, n);
    part[n] = '\0';
    if (parse_int(part, 1, 99, &v) != 0) {
        return -1;
    }
    *major = (int)v;
    if (parse_int(dot + 1, 0, 99, &v) != 0) {
        return -1;
    }
    *minor = (int)v;
    return 0;
}

/* Each key once per section (the top, or one [gpu] block): a repeated name= is what an injected line
 * break in a GPU name would look like. Returns the key's bit, or 0 for an unknown key. */
static unsigned key_bit(const char *key)
{
    static const char *const keys[] = {"format", "profile", "driver_version", "cuda_driver_version",
                                       "nvml_init_error", "cuinit_error", "cuinit_hang", "stub",
                                       "require_device_nodes",
                                       "name", "memory_bytes", "compute_capability", "sm_count", "uuid",
                                       "pci_bus_id", "pci_device_id", "minor"};
    size_t i;
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strcmp(key, keys[i]) == 0) {
            return 1u << i;
        }
    }
    return 0;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* "GPU-" followed by 32 hex digits in 8-4-4-4-12 groups: the form NVML and nvidia-smi print. */
static int parse_uuid(const char *text, unsigned char bytes[16])
{
    static const int groups[5] = {8, 4, 4, 4, 12};
    const char *p = text;
    int g, i, n = 0;
    if (strncmp(p, "GPU-", 4) != 0) {
        return -1;
    }
    p += 4;
    for (g = 0; g < 5; g++) {
        for (i = 0; i < groups[g]; i += 2) {
            int hi = hex_value(p[0]);
            int lo = hi < 0 ? -1 : hex_value(p[1]);
            if (lo < 0) {
                return -1;
            }
            bytes[n++] = (unsigned char)(hi * 16 + lo);
            p += 2;
        }
        if (g < 4 && *p++ != '-') {
            return -1;
        }
    }
    return *p == '\0' ? 0 : -1;
}

static int parse_bus_id(sim_gpu *gpu, const char *text)
{
    unsigned d, b, dev, f;
    char tail;
    if (sscanf(text, "%x:%x:%x.%x%c", &d, &b, &dev, &f, &tail) != 4 || b > 0xff || dev > 0x1f || f > 7) {
        return -1;
    }
    gpu->pci_domain = d;
    gpu->pci_bus = b;
    gpu->pci_device = dev;
    gpu->pci_function = f;
    snprintf(gpu->pci_bus_id, sizeof gpu->pci_bus_id, "%08X:%02X:%02X.%X", d, b, dev, f);
    return 0;
}

static int fail(sim_config *cfg, int line, const char *what, const char *key)
{
    snprintf(cfg->message, sizeof cfg->message, "%.200s: line %d: %.60s%s%.40s", cfg->path[0] ? cfg->path : "config",
             line, what, key ? ": " : "", key ? key : "");
    cfg->malformed = 1;
    return -1;
}

static int set_top(sim_config *cfg, int line, const char *key, const char *value)
{
    long long v;
    if (strcmp(key, "format") == 0) {
        if (parse_int(value, 1, 1, &v) != 0) {
            return fail(cfg, line, "unsupported format (expected 1)", value);
        }
    } else if (strcmp(key, "profile") == 0) {
        if (set_text(cfg->profile, sizeof cfg->profile, value) != 0) {
            return fail(cfg, line, "too long or not printable", key);
        }
    } else if (strcmp(key, "driver_version") == 0) {
        if (set_text(cfg->driver_version, sizeof cfg->driver_version, value) != 0) {
            return fail(cfg, line, "too long or not printable", key);
        }
    } else if (strcmp(key, "cuda_driver_version") == 0) {
        if (parse_int(value, 1000, 99990, &v) != 0) {
            return fail(cfg, line, "expected 1000*major + 10*minor", key);
        }
        cfg->cuda_driver_version = (int)v;
    } else if (strcmp(key, "nvml_init_error") == 0 || strcmp(key, "cuinit_error") == 0) {
        if (parse_int(value, 0, 9999, &v) != 0) {
            return fail(cfg, line, "expected an error number", key);
        }
        *(key[0] == 'n' ? &cfg->nvml_init_error : &cfg->cuinit_error) = (int)v;
    } else if (strcmp(key, "stub") == 0 || strcmp(key, "require_device_nodes") == 0 ||
               strcmp(key, "cuinit_hang") == 0) {
        if (parse_int(value, 0, 1, &v) != 0) {
            return fail(cfg, line, "expected 0 or 1", key);
        }
        *(key[0] == 's' ? &cfg->stub : key[0] == 'r' ? &cfg->require_device_nodes : &cfg->cuinit_hang) = (int)v;
    } else {
        return fail(cfg, line, "unknown key", key);
    }
    return 0;
}

static int set_gpu(sim_config *cfg, int line, sim_gpu *gpu, const char *key, const char *value)
{
    long long v;
    if (strcmp(key, "name") == 0) {
        if (set_text(gpu->name, sizeof gpu->name, value) != 0) {
            return fail(cfg, line, "longer than 95 bytes or not printable", key);
        }
    } else if (strcmp(key, "memory_bytes") == 0) {
        if (parse_int(value, 1, (long long)1 << 50, &v) != 0) {
            return fail(cfg, line, "expected a byte count", key);
        }
        gpu->memory_bytes = (unsigned long long)v;
    } else if (strcmp(key, "compute_capability") == 0) {
        if (parse_cc(value, &gpu->cc_major, &gpu->cc_minor) != 0) {
            return fail(cfg, line, "expected MAJOR.MINOR", key);
        }
    } else if (strcmp(key, "sm_count") == 0) {
        if (parse_int(value, 1, 100000, &v) != 0) {
            return fail(cfg, line, "expected a positive count", key);
        }
        gpu->sm_count = (int)v;
    } else if (strcmp(key, "uuid") == 0) {
        if (parse_uuid(value, gpu->uuid_bytes) != 0) {
            return fail(cfg, line, "expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", key);
        }
        copy_str(gpu->uuid, sizeof gpu->uuid, value);
    } else if (strcmp(key, "pci_bus_id") == 0) {
        if (parse_bus_id(gpu, value) != 0) {
            return fail(cfg, line, "expected DOMAIN:BUS:DEVICE.FUNCTION in hex", key);
        }
    } else if (strcmp(key, "pci_device_id") == 0) {
        if (parse_int(value, 0, 0xffffffffLL, &v) != 0) {
            return fail(cfg, line, "expected a 32-bit number", key);
        }
        gpu->pci_device_id = (unsigned)v;
    } else if (strcmp(key, "minor") == 0) {
        if (parse_int(value, 0, 255, &v) != 0) {
            return fail(cfg, line, "expected 0..255", key);
        }
        gpu->minor = (int)v;
    } else {
        return fail(cfg, line, "unknown GPU key", key);
    }
    return 0;
}

int sim_config_parse(const char *text, sim_config *cfg)
{
    char line_buf[512];
    const char *p = text;
    int line = 0, g;
    unsigned seen = 0, bit;
    sim_gpu *gpu = NULL;

    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *s, *eq;
        line++;
        if (n >= sizeof line_buf) {
            return fail(cfg, line, "line too long", NULL);
        }
        memcpy(line_buf, p, n);
        line_buf[n] = '\0';
        p = nl ? nl + 1 : p + n;
        s = trim(line_buf);
        if (*s == '\0' || *s == '#') {
            continue;
        }
        if (strcmp(s, "[gpu]") == 0) {
            if (cfg->gpu_count >= SIM_MAX_GPUS) {
                return fail(cfg, line, "too many GPUs", NULL);
            }
            gpu = &cfg->gpus[cfg->gpu_count];
            memset(gpu, 0, sizeof *gpu);
            gpu->minor = cfg->gpu_count;
            cfg->gpu_count++;
            seen = 0;
            continue;
        }
        if (*s == '[') {
            return fail(cfg, line, "unknown section (only [gpu])", NULL);
        }
        eq = strchr(s, '=');
        if (eq == NULL) {
            return fail(cfg, line, "expected key=value or [gpu]", NULL);
        }
        *eq = '\0';
        bit = key_bit(trim(s));
        if (bit != 0 && (seen & bit)) {
            return fail(cfg, line, "key appears twice in its section", trim(s));
        }
        seen |= bit;
        if ((gpu ? set_gpu(cfg, line, gpu, trim(s), trim(eq + 1))
                 : set_top(cfg, line, trim(s), trim(eq + 1))) != 0) {
            return -1;
        }
    }
    if (cfg->driver_version[0] == '\0' || cfg->cuda_driver_version == 0) {
        return fail(cfg, line, "driver_version and cuda_driver_version are required", NULL);
    }
    for (g = 0; g < cfg->gpu_count; g++) {
        const sim_gpu *x = &cfg->gpus[g];
        if (x->name[0] == '\0' || x->uuid[0] == '\0' || x->pci_bus_id[0] == '\0' || x->memory_bytes == 0 ||
            x->cc_major == 0 || x->sm_count == 0) {
            return fail(cfg, line, "a [gpu] block needs name, uuid, pci_bus_id, memory_bytes, "
                                   "compute_capability and sm_count", NULL);
        }
    }
    return 0;
}

/* The errno of opening a device node read-write as the driver does, or 0 when it opens. */
static int open_error(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    close(fd);
    return 0;
}

/* With require_device_nodes, the libraries see what the container was given, as the real ones do:
 * no /dev/nvidiactl means no driver, and a GPU without its /dev/nvidiaN node is absent. The nodes are
 * opened as well: a node the device cgroup does not let the container open (EPERM, what systemd leaves
 * after `systemctl daemon-reload`, NVIDIA/nvidia-container-toolkit#48) and an nvidia-uvm that is missing
 * or names a major number no driver holds (ENXIO, a stale CDI spec) are what the libraries then report. */
static void apply_device_nodes(sim_config *cfg)
{
    int g, kept = 0;
    char node[64];
    if (!cfg->require_device_nodes) {
        return;
    }
    if (access("/dev/nvidiactl", F_OK) != 0) {
        cfg->control_missing = 1;
    } else {
        cfg->control_denied = open_error("/dev/nvidiactl");
    }
    cfg->uvm_error = access("/dev/nvidia-uvm", F_OK) != 0 ? ENOENT : open_error("/dev/nvidia-uvm");
    for (g = 0; g < cfg->gpu_count; g++) {
        snprintf(node, sizeof node, "/dev/nvidia%d", cfg->gpus[g].minor);
        if (access(node, F_OK) == 0) {
            cfg->gpus[kept++] = cfg->gpus[g];
        }
    }
    cfg->gpu_count = kept;
}

static void load(void)
{
    sim_config *cfg = &g_config;
    const char *path = getenv(SIM_CONF_ENV);
    FILE *f;
    char *text;
    size_t n;

    copy_str(cfg->path, sizeof cfg->path, path && *path ? path : SIM_DEFAULT_CONF);
    f = fopen(cfg->path, "r");
    if (f == NULL) {
        sim_trace("config %s: not found (%s)", cfg->path, strerror(errno));
        return;
    }
    cfg->found = 1;
    text = calloc(1, 65537);
    if (text == NULL) {
        fclose(f);
        fail(cfg, 0, "out of memory", NULL);
        return;
    }
    n = fread(text, 1, 65536, f);
    /* A longer file would be read cut short, mid-line: refused, not half-read. */
    if (n == 65536 && fgetc(f) != EOF) {
        fail(cfg, 0, "longer than 64 KiB", NULL);
    }
    fclose(f);
    text[n] = '\0';
    if (cfg->malformed || sim_config_parse(text, cfg) != 0) {
        /* A malformed file is a refenv bug, not a user's: say so once, where it will be seen. */
        fprintf(stderr, "refenv simulated driver: %s\n", cfg->message);
        cfg->gpu_count = 0;
    } else {
        apply_device_nodes(cfg);
    }
    free(text);
    sim_trace("config %s: profile=%s driver=%s cuda=%d gpus=%d", cfg->path, cfg->profile, cfg->driver_version,
              cfg->cuda_driver_version, cfg->gpu_count);
}

const sim_config *sim_config_get(void)
{
    pthread_once(&g_once, load);
    return &g_config;
}

void sim_trace(const char *fmt, ...)
{
    const char *path = getenv(SIM_TRACE_ENV);
    char line[640];
    va_list ap;
    int n, fd;
    if (path == NULL || *path == '\0') {
        return;
    }
    n = snprintf(line, sizeof line, "[%d] ", (int)getpid());
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2) {
        n = (int)sizeof line - 2;
    }
    line[n++] = '\n';
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        /* One write per line, so lines from several threads do not interleave. */
        if (write(fd, line, (size_t)n) < 0) {
            n = 0;
        }
        close(fd);
    }
}

/* ---- CUDA_VISIBLE_DEVICES ------------------------------------------------------------------
 * As the driver applies it (CUDA C Programming Guide, "CUDA Environment Variables"), in the order
 * torch reconstructs it in torch/cuda/__init__.py (_parse_visible_devices, _device_count_nvml,
 * _transform_uuid_to_ordinals), so that torch's NVML-based count and this driver always agree:
 * - ordinals: each entry is read like strtoul ("1gpu" is 1, " 2" is 2); a negative or unreadable
 *   entry ends the list; an ordinal listed twice empties it; then the list is cut at the first
 *   ordinal the machine does not have;
 * - "GPU-" lists: entries must start with "GPU-" (the first that does not ends the list), a
 *   repeated entry empties it; each is a UUID prefix, and the first that matches no GPU or more
 *   than one ends the list; a GPU selected twice empties it;
 * - "MIG-" lists select nothing here (no simulated GPU is in MIG mode). */

#define SIM_MAX_ENTRIES 256

static int contains(const int *list, int n, int value)
{
    int i;
    for (i = 0; i < n; i++) {
        if (list[i] == value) {
            return 1;
        }
    }
    return 0;
}

/* torch's _strtoul: an optional sign then digits, whatever follows ignored; -1 when none. */
static long long read_ordinal(const char *entry, size_t len)
{
    size_t i = 0;
    long long v = 0;
    int digits = 0, negative = 0;
    while (i < len && isspace((unsigned char)entry[i])) {
        i++;
    }
    if (i < len && (entry[i] == '+' || entry[i] == '-')) {
        negative = entry[i] == '-';
        i++;
    }
    for (; i < len && isdigit((unsigned char)entry[i]); i++, digits++) {
        if (v < 100000000) {
            v = v * 10 + (entry[i] - '0');
        }
    }
    if (digits == 0) {
        return -1;
    }
    return negative ? -v : v;
}

static int uuid_ordinal(const char *entry, size_t len, const sim_gpu *gpus, int gpu_count)
{
    int g, match = -1;
    for (g = 0; g < gpu_count; g++) {
        if (strlen(gpus[g].uuid) >= len && strncmp(gpus[g].uuid, entry, len) == 0) {
            if (match >= 0) {
                return -1; /* ambiguous prefix */
            }
            match = g;
        }
    }
    return match;
}

static int visible_by_ordinal(const char *value, int gpu_count, int *out, int cap)
{
    const char *p = value;
    int n = 0, i;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        long long x = read_ordinal(p, len);
        if (x >= 0 && x < 100000000 && contains(out, n, (int)x)) {
            return 0;
        }
        if (x < 0 || n >= cap) {
            break;
        }
        out[n++] = (int)x;
        if (comma == NULL) {
            break;
        }
        p = comma + 1;
    }
    for (i = 0; i < n; i++) {
        if (out[i] >= gpu_count) {
            return i;
        }
    }
    return n;
}

static int visible_by_uuid(const char *value, const sim_gpu *gpus, int gpu_count, int *out, int cap)
{
    const char *starts[SIM_MAX_ENTRIES];
    size_t lens[SIM_MAX_ENTRIES];
    const char *p = value;
    int count = 0, n = 0, i, k;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        for (k = 0; k < count; k++) {
            if (lens[k] == len && strncmp(starts[k], p, len) == 0) {
                return 0;
            }
        }
        if (len < 4 || strncmp(p, "GPU-", 4) != 0 || count >= SIM_MAX_ENTRIES) {
            break;
        }
        starts[count] = p;
        lens[count++] = len;
        if (comma == NULL) {
            break;
        }
        p = comma + 1;
    }
    for (i = 0; i < count && n < cap; i++) {
        int idx = uuid_ordinal(starts[i], lens[i], gpus, gpu_count);
        if (idx < 0) {
            break;
        }
        if (contains(out, n, idx)) {
            return 0;
        }
        out[n++] = idx;
    }
    return n;
}

int sim_visible_devices(const char *value, const sim_gpu *gpus, int gpu_count, int *out, int cap)
{
    int n;
    if (value == NULL) {
        for (n = 0; n < gpu_count && n < cap; n++) {
            out[n] = n;
        }
        return n;
    }
    if (strncmp(value, "MIG-", 4) == 0) {
        return 0;
    }
    if (strncmp(value, "GPU-", 4) == 0) {
        return visible_by_uuid(value, gpus, gpu_count, out, cap);
    }
    return visible_by_ordinal(value, gpu_count, out, cap);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

void sim_json_raw(sim_json *j, const char *text)
{
    size_t n = strlen(text);
    if (j->len + n + 1 > j->cap) {
        n = j->cap > j->len + 1 ? j->cap - j->len - 1 : 0;
    }
    memcpy(j->buf + j->len, text, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

void sim_json_str(sim_json *j, const char *value)
{
    char esc[8];
    const unsigned char *p = (const unsigned char *)value;
    sim_json_raw(j, "\"");
    for (; *p; p++) {
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            esc[2] = '\0';
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
        } else {
            esc[0] = (char)*p;
            esc[1] = '\0';
        }
        sim_json_raw(j, esc);
    }
    sim_json_raw(j, "\"");
}

void sim_json_key(sim_json *j, const char *key, int first)
{
    if (!first) {
        sim_json_raw(j, ", ");
    }
    sim_json_str(j, key);
    sim_json_raw(j, ": ");
}

void sim_json_int(sim_json *j, long long value)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", value);
    sim_json_raw(j, num);
}

void sim_json_bool(sim_json *j, int value)
{
    sim_json_raw(j, value ? "true" : "false");
}

void sim_json_config_head(sim_json *j, const sim_config *cfg, const char *library, int cuda_driver_version)
{
    sim_json_raw(j, "{");
    sim_json_key(j, "simulated", 1);
    sim_json_bool(j, 1);
    sim_json_key(j, "library", 0);
    sim_json_str(j, library);
    sim_json_key(j, "config_path", 0);
    sim_json_str(j, cfg->path);
    sim_json_key(j, "config_found", 0);
    sim_json_bool(j, cfg->found);
    sim_json_key(j, "config_error", 0);
    if (cfg->malformed) {
        sim_json_str(j, cfg->message);
    } else {
        sim_json_raw(j, "null");
    }
    sim_json_key(j, "profile", 0);
    sim_json_str(j, cfg->profile);
    sim_json_key(j, "driver_version", 0);
    sim_json_str(j, cfg->driver_version);
    sim_json_key(j, "cuda_driver_version", 0);
    sim_json_int(j, cuda_driver_version);
    sim_json_key(j, "gpu_count", 0);
    sim_json_int(j, cfg->gpu_count);
}
