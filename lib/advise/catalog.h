/*
 * catalog.h — GPU instance prices from CSV files read by header name, so a
 * SkyPilot catalog (InstanceType, AcceleratorName, AcceleratorCount, vCPUs,
 * MemoryGiB, Price, SpotPrice, Region, AvailabilityZone — any column order,
 * extra columns ignored, empty prices allowed) loads as it is. Rows without
 * a whole number of accelerators (CPU-only types, fractional GPUs) are
 * skipped. A "# snapshot: DATE" comment line labels the prices' date.
 */
#ifndef GPUCTL_LIB_CATALOG_H
#define GPUCTL_LIB_CATALOG_H

#include <stddef.h>

typedef struct cat_row {
	char cloud[16];
	char instance[48];
	char acc[32];
	unsigned count;
	double vcpus, mem_gib;     /* 0 when absent */
	double price, spot;        /* $/hour; < 0 when the catalog has none */
	char region[32];
	char zone[32];
} cat_row;

typedef struct catalog {
	cat_row *rows;             /* owned */
	size_t n, cap;
	char date[64];             /* of the last file with a "# snapshot:" line; "" if none */
	size_t skipped;            /* rows without whole accelerators */
} catalog;

/*
 * Add the rows of `path` to c (zero-initialised before the first call).
 * `cloud` names the rows' cloud unless the file has a Cloud column. Returns
 * 0, or a negative GC_E* code with a reason naming the file (a missing
 * required column: InstanceType, AcceleratorName, AcceleratorCount, Price,
 * Region; a malformed number or CSV).
 */
int catalog_load(catalog *c, const char *path, const char *cloud, char *err, size_t errlen);
/* the same, from a buffer (borrowed); `name` is used in messages */
int catalog_load_buf(catalog *c, const char *data, size_t len, const char *name, const char *cloud, char *err,
		     size_t errlen);
void catalog_free(catalog *c);

/*
 * SkyPilot's GCP catalog: each GPU count priced on a row of its own with no
 * InstanceType, apart from the machines (CPU rows). A GPU row becomes a row
 * of its host, the cheapest in the same zone that the rules allow, priced
 * GPU + host (spot likewise); a GPU no rule or no host in its zone serves is
 * left out (counted in skipped). rules: data/sky-gcp-hosts.csv.
 */
typedef struct cat_host_rule {
	char acc[32];              /* SkyPilot's accelerator name; "DEFAULT": any other */
	unsigned count;
	char hosts[256];           /* ';'-separated instance types, or "n1" */
	unsigned min_vcpus;        /* with n1: n1-standard, -highmem or -highcpu with at least these vCPUs
				      and 4 GiB of memory each */
} cat_host_rule;

/* data/sky-gcp-hosts.csv: 0, or a GC_E* code with err set; free(*out) */
int catalog_load_host_rules(const char *path, cat_host_rule **out, size_t *n, char *err, size_t errlen);
/* The GCP file at path into c as its rows would be priced by SkyPilot (above). 0, or GC_E* with err. */
int catalog_load_gcp(catalog *c, const char *path, const cat_host_rule *rules, size_t nrules, char *err,
		     size_t errlen);
/* the same from a buffer (borrowed) */
int catalog_load_gcp_buf(catalog *c, const char *data, size_t len, const char *name, const cat_host_rule *rules,
			 size_t nrules, char *err, size_t errlen);

#endif
