/*
 * price.c — a GPU-hour's price from the instance type and advise's catalog
 * (price.h).
 */
#include "price.h"

#include "advise/catalog.h"
#include "spot/spot.h"
#include "util/datadir.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_TIMEOUT_MS 2000
#define META_MAX 512

int price_is_cloud(const char *arg)
{
	return !strcmp(arg, "auto") || !strcmp(arg, "aws") || !strcmp(arg, "gcp") || !strcmp(arg, "azure");
}

struct body {
	char buf[META_MAX];
	size_t len;
	bool over;
};

static size_t take(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t k = size * n;
	if (b->len + k >= sizeof b->buf) {
		b->over = true;
		return 0;
	}
	memcpy(b->buf + b->len, p, k);
	b->len += k;
	b->buf[b->len] = '\0';
	return k;
}

/* one request to the metadata service: 0 with its 200 body in out (trimmed), or -1 */
static int ask(const char *method, const char *url, const char *header, char *out, size_t len)
{
	CURL *e = curl_easy_init();
	struct curl_slist *h = header ? curl_slist_append(NULL, header) : NULL;
	struct body b = {.len = 0};
	long code = 0;
	bool ok = e && (!header || h) && curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http") == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_NOPROXY, "*") == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)META_TIMEOUT_MS) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, take) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_WRITEDATA, &b) == CURLE_OK && curl_easy_perform(e) == CURLE_OK &&
		  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200 && !b.over;
	curl_slist_free_all(h);
	if (e)
		curl_easy_cleanup(e);
	if (!ok)
		return -1;
	size_t n = b.len;
	while (n && (b.buf[n - 1] == '\n' || b.buf[n - 1] == '\r' || b.buf[n - 1] == ' '))
		n--;
	b.buf[n] = '\0';
	snprintf(out, len, "%s", b.buf);
	return 0;
}

/* the instance type, as the cloud's metadata service says it: 0, or -1 */
static int instance_type(enum spot_cloud c, char *out, size_t len)
{
	const char *env = getenv("GPUCTL_METADATA_URL");
	char url[600], hdr[256], token[META_MAX];
	switch (c) {
	case SPOT_AWS:
		/* IMDSv2: a token first */
		snprintf(url, sizeof url, "%s/latest/api/token", env && *env ? env : "http://169.254.169.254");
		if (ask("PUT", url, "X-aws-ec2-metadata-token-ttl-seconds: 60", token, sizeof token) < 0)
			return -1;
		snprintf(url, sizeof url, "%s/latest/meta-data/instance-type", env && *env ? env : "http://169.254.169.254");
		snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %.200s", token);
		return ask("GET", url, hdr, out, len);
	case SPOT_GCP: {
		snprintf(url, sizeof url, "%s/computeMetadata/v1/instance/machine-type",
			 env && *env ? env : "http://metadata.google.internal");
		char full[META_MAX];
		if (ask("GET", url, "Metadata-Flavor: Google", full, sizeof full) < 0)
			return -1;
		/* projects/NUMBER/machineTypes/a2-highgpu-1g */
		const char *slash = strrchr(full, '/');
		snprintf(out, len, "%s", slash ? slash + 1 : full);
		return 0;
	}
	case SPOT_AZURE:
		snprintf(url, sizeof url, "%s/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text",
			 env && *env ? env : "http://169.254.169.254");
		return ask("GET", url, "Metadata: true", out, len);
	case SPOT_NONE:
		break;
	}
	return -1;
}

int price_find(const char *arg, double *per_gpu_hour, char *desc, size_t desclen, char *err, size_t errlen)
{
	enum spot_cloud c = SPOT_NONE;
	bool autodetect = false;
	if (spot_parse_cloud(arg, &c, &autodetect) != 0 || (!autodetect && c == SPOT_NONE)) {
		snprintf(err, errlen, "'%s' is not a cloud (expected auto, aws, gcp or azure)", arg);
		return -1;
	}
	if (autodetect)
		c = spot_detect(NULL);
	if (c == SPOT_NONE) {
		snprintf(err, errlen, "this machine is not on AWS, GCP or Azure, as far as its DMI data tells "
			 "(name the cloud, or give the price in dollars)");
		return -1;
	}
	const char *cloud = spot_cloud_name(c);
	char type[META_MAX];
	curl_global_init(CURL_GLOBAL_DEFAULT); /* counted: notify.c's, if any, stays */
	int got = instance_type(c, type, sizeof type);
	curl_global_cleanup();
	if (got < 0 || !type[0]) {
		snprintf(err, errlen, "%s's metadata service did not say this instance's type", cloud);
		return -1;
	}
	char name[64], path[4096], why[512];
	snprintf(name, sizeof name, "catalog/%s.csv", cloud);
	catalog cat;
	memset(&cat, 0, sizeof cat);
	if (datadir_file(name, path, sizeof path, why, sizeof why) != 0 ||
	    catalog_load(&cat, path, cloud, why, sizeof why) != 0) {
		snprintf(err, errlen, "%s", why);
		catalog_free(&cat);
		return -1;
	}
	const cat_row *best = NULL;
	for (size_t i = 0; i < cat.n; i++) {
		const cat_row *r = &cat.rows[i];
		if (strcmp(r->instance, type) == 0 && r->price > 0 && r->count > 0 && (!best || r->price < best->price))
			best = r;
	}
	if (!best) {
		snprintf(err, errlen, "%s instance type '%.60s' is not in gpuctl advise's price snapshot (%s)", cloud, type,
			 path);
		catalog_free(&cat);
		return -1;
	}
	*per_gpu_hour = best->price / best->count;
	snprintf(desc, desclen, "%s %s: $%.4g/h for %u GPU%s (%s, the lowest of the snapshot's regions%s%s)", cloud,
		 type, best->price, best->count, best->count == 1 ? "" : "s", best->region, cat.date[0] ? ", of " : "",
		 cat.date);
	catalog_free(&cat);
	return 0;
}
