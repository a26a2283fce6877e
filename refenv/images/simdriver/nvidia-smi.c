/* refenv simulated driver: nvidia-smi.
 *
 * Loads libnvidia-ml.so.1 the way the real tool does and prints the summary table, `-L`, or
 * `--query-gpu=... --format=csv`. Failures print the real texts with the real exit codes
 * (nvidia-smi(1), "RETURN VALUE": 2 invalid argument, 6 not found, 9 driver not loaded,
 * 12 NVML library not found, 255 other; a version mismatch exits 18, as observed in the field).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*fn_init)(void);
typedef const char *(*fn_error_string)(int);
typedef int (*fn_string)(char *, unsigned int);
typedef int (*fn_int)(int *);
typedef int (*fn_count)(unsigned int *);
typedef int (*fn_handle)(unsigned int, void **);
typedef int (*fn_dev_string)(void *, char *, unsigned int);
typedef int (*fn_dev_memory)(void *, unsigned long long *);
typedef int (*fn_dev_pci)(void *, void *);
typedef int (*fn_dev_cc)(void *, int *, int *);

static struct {
    fn_init init;
    fn_error_string error_string;
    fn_string driver_version;
    fn_string nvml_version;
    fn_int cuda_version;
    fn_count count;
    fn_handle handle;
    fn_dev_string name;
    fn_dev_string uuid;
    fn_dev_memory memory;
    fn_dev_pci pci;
    fn_dev_cc cc;
} nvml;

typedef struct {
    char name[96];
    char uuid[96];
    char bus_id[32];
    unsigned long long memory[3]; /* total, free, used */
    int cc_major;
    int cc_minor;
} gpu_info;

static char g_driver[80] = "N/A";
static char g_cuda[16] = "N/A";

static int load(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (lib == NULL) {
        printf("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the "
               "NVIDIA Display Driver is properly installed and present in your system.\n"
               "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n");
        return 12;
    }
#define LOAD(field, symbol) *(void **)(&nvml.field) = dlsym(lib, symbol)
    LOAD(init, "nvmlInit_v2");
    LOAD(error_string, "nvmlErrorString");
    LOAD(driver_version, "nvmlSystemGetDriverVersion");
    LOAD(nvml_version, "nvmlSystemGetNVMLVersion");
    LOAD(cuda_version, "nvmlSystemGetCudaDriverVersion_v2");
    LOAD(count, "nvmlDeviceGetCount_v2");
    LOAD(handle, "nvmlDeviceGetHandleByIndex_v2");
    LOAD(name, "nvmlDeviceGetName");
    LOAD(uuid, "nvmlDeviceGetUUID");
    LOAD(memory, "nvmlDeviceGetMemoryInfo");
    LOAD(pci, "nvmlDeviceGetPciInfo_v3");
    LOAD(cc, "nvmlDeviceGetCudaComputeCapability");
#undef LOAD
    if (!nvml.init || !nvml.error_string || !nvml.driver_version || !nvml.count || !nvml.handle || !nvml.name ||
        !nvml.uuid || !nvml.memory || !nvml.pci || !nvml.cc || !nvml.cuda_version) {
        printf("Failed to initialize NVML: Function Not Found\n");
        return 255;
    }
    return 0;
}

static int start(void)
{
    int rc = nvml.init();
    char version[80];
    if (rc == 0) {
        int cuda = 0;
        nvml.driver_version(g_driver, sizeof g_driver);
        if (nvml.cuda_version(&cuda) == 0) {
            snprintf(g_cuda, sizeof g_cuda, "%d.%d", cuda / 1000, (cuda % 1000) / 10);
        }
        return 0;
    }
    if (rc == 9) {
        printf("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
               "latest NVIDIA driver is installed and running.\n\n");
        return 9;
    }
    printf("Failed to initialize NVML: %s\n", nvml.error_string(rc));
    if (rc == 18 && nvml.nvml_version && nvml.nvml_version(version, sizeof version) == 0) {
        /* "13.580.95.05" -> "580.95": the library's branch and release, as the real tool prints. */
        char *branch = strchr(version, '.');
        char *patch = branch ? strchr(branch + 1, '.') : NULL;
        char *end = patch ? strchr(patch + 1, '.') : NULL;
        if (end) {
            *end = '\0';
        }
        printf("NVML library version: %s\n", branch ? branch + 1 : version);
    }
    return rc > 0 && rc < 256 ? rc : 255;
}

static int read_gpu(unsigned int i, gpu_info *g)
{
    void *h = NULL;
    unsigned char pci[128];
    memset(g, 0, sizeof *g);
    if (nvml.handle(i, &h) != 0 || nvml.name(h, g->name, sizeof g->name) != 0 ||
        nvml.uuid(h, g->uuid, sizeof g->uuid) != 0 || nvml.memory(h, g->memory) != 0 || nvml.pci(h, pci) != 0 ||
        nvml.cc(h, &g->cc_major, &g->cc_minor) != 0) {
        return -1;
    }
    /* nvmlPciInfo_t: 16-byte legacy id, five unsigned ints, then the 32-byte bus id. */
    memcpy(g->bus_id, pci + 16 + 5 * sizeof(unsigned int), sizeof g->bus_id);
    g->bus_id[sizeof g->bus_id - 1] = '\0';
    return 0;
}

static int gpu_count(unsigned int *n)
{
    if (nvml.count(n) != 0 || *n == 0) {
        printf("No devices were found\n");
        return 6;
    }
    return 0;
}

static int table(void)
{
    static const char *rule = "+-----------------------------------------+------------------------+----------------------+";
    char head[256], mem[64];
    unsigned int n, i;
    time_t now = time(NULL);
    int rc = gpu_count(&n);
    if (rc != 0) {
        return rc;
    }
    printf("%s", ctime(&now));
    printf("+-----------------------------------------------------------------------------------------+\n");
    snprintf(head, sizeof head, "NVIDIA-SMI %-22.40s Driver Version: %-14.40s CUDA Version: %-8.15s", g_driver, g_driver,
             g_cuda);
    printf("| %-87s |\n", head);
    printf("%s\n", rule);
    printf("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n");
    printf("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n");
    printf("|=========================================+========================+======================|\n");
    for (i = 0; i < n; i++) {
        gpu_info g;
        if (read_gpu(i, &g) != 0) {
            printf("Unable to determine the device handle for GPU%u: Unknown Error\n", i);
            return 255;
        }
        snprintf(mem, sizeof mem, "%lluMiB / %lluMiB", g.memory[2] >> 20, g.memory[0] >> 20);
        printf("| %3u  %-29.29s N/A  | %18s N/A | %20s |\n", i, g.name, g.bus_id, "N/A");
        printf("| N/A   N/A    N/A             N/A /  N/A | %22s | %6s       Default |\n", mem, "N/A");
        printf("%s\n", rule);
    }
    printf("\nSimulated driver: sensors, processes and clocks are not simulated (N/A).\n");
    return 0;
}

static int list(void)
{
    unsigned int n, i;
    int rc = gpu_count(&n);
    if (rc != 0) {
        return rc;
    }
    for (i = 0; i < n; i++) {
        gpu_info g;
        if (read_gpu(i, &g) != 0) {
            return 255;
        }
        printf("GPU %u: %s (UUID: %s)\n", i, g.name, g.uuid);
    }
    return 0;
}

static int field_value(const char *field, unsigned int i, unsigned int n, const gpu_info *g, int units, char *out,
                       size_t cap)
{
    const char *mib = units ? " MiB" : "";
    if (strcmp(field, "index") == 0) {
        snprintf(out, cap, "%u", i);
    } else if (strcmp(field, "count") == 0) {
        snprintf(out, cap, "%u", n);
    } else if (strcmp(field, "name") == 0 || strcmp(field, "gpu_name") == 0) {
        snprintf(out, cap, "%s", g->name);
    } else if (strcmp(field, "uuid") == 0 || strcmp(field, "gpu_uuid") == 0) {
        snprintf(out, cap, "%s", g->uuid);
    } else if (strcmp(field, "driver_version") == 0) {
        snprintf(out, cap, "%s", g_driver);
    } else if (strcmp(field, "pci.bus_id") == 0 || strcmp(field, "gpu_bus_id") == 0) {
        snprintf(out, cap, "%s", g->bus_id);
    } else if (strcmp(field, "memory.total") == 0) {
        snprintf(out, cap, "%llu%s", g->memory[0] >> 20, mib);
    } else if (strcmp(field, "memory.free") == 0) {
        snprintf(out, cap, "%llu%s", g->memory[1] >> 20, mib);
    } else if (strcmp(field, "memory.used") == 0) {
        snprintf(out, cap, "%llu%s", g->memory[2] >> 20, mib);
    } else if (strcmp(field, "compute_cap") == 0) {
        snprintf(out, cap, "%d.%d", g->cc_major, g->cc_minor);
    } else {
        return -1;
    }
    return 0;
}

static int query(const char *fields, const char *format)
{
    char list_buf[512], value[160];
    char *names[32];
    int count = 0, header = 1, units = 1, k;
    unsigned int n, i;
    char *tok, *save = NULL;
    gpu_info probe;

    if (format == NULL || strncmp(format, "csv", 3) != 0) {
        printf("Please specify the output format with --format=csv[,noheader][,nounits].\n");
        return 2;
    }
    header = strstr(format, "noheader") == NULL;
    units = strstr(format, "nounits") == NULL;
    snprintf(list_buf, sizeof list_buf, "%s", fields);
    for (tok = strtok_r(list_buf, ",", &save); tok && count < 32; tok = strtok_r(NULL, ",", &save)) {
        names[count++] = tok;
    }
    memset(&probe, 0, sizeof probe);
    for (k = 0; k < count; k++) {
        if (field_value(names[k], 0, 0, &probe, units, value, sizeof value) != 0) {
            printf("Field \"%s\" is not a valid field to query.\n\n", names[k]);
            return 2;
        }
    }
    if (gpu_count(&n) != 0) {
        return 6;
    }
    if (header) {
        for (k = 0; k < count; k++) {
            int memory = strncmp(names[k], "memory.", 7) == 0;
            printf("%s%s%s", k ? ", " : "", names[k], memory && units ? " [MiB]" : "");
        }
        printf("\n");
    }
    for (i = 0; i < n; i++) {
        gpu_info g;
        if (read_gpu(i, &g) != 0) {
            return 255;
        }
        for (k = 0; k < count; k++) {
            field_value(names[k], i, n, &g, units, value, sizeof value);
            printf("%s%s", k ? ", " : "", value);
        }
        printf("\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *fields = NULL, *format = NULL;
    int want_list = 0, i, rc;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-L") == 0 || strcmp(argv[i], "--list-gpus") == 0) {
            want_list = 1;
        } else if (strncmp(argv[i], "--query-gpu=", 12) == 0) {
            fields = argv[i] + 12;
        } else if (strncmp(argv[i], "--format=", 9) == 0) {
            format = argv[i] + 9;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("refenv simulated nvidia-smi: [-L | --query-gpu=FIELDS --format=csv[,noheader][,nounits]]\n"
                   "FIELDS: index, count, name, uuid, driver_version, pci.bus_id, memory.total, memory.free,\n"
                   "memory.used, compute_cap\n");
            return 0;
        } else {
            printf("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n");
            return 2;
        }
    }
    rc = load();
    if (rc == 0) {
        rc = start();
    }
    if (rc != 0) {
        return rc;
    }
    if (fields != NULL) {
        return query(fields, format);
    }
    return want_list ? list() : table();
}
