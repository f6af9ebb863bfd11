/*
 * http.c - the common setup of objfs's curl handles (see http.h).
 */
#include "config.h"

#include "backend/http.h"

void objfs_http_setup(CURL *h, const char *url, const char *ca_file,
		      bool insecure)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS,
			 (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, PACKAGE_NAME "/" PACKAGE_VERSION);
	if (ca_file != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, ca_file);
	if (insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}
