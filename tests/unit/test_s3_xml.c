/*
 * Unit tests of the S3 XML parsers and builders: good documents (with and
 * without namespaces, unknown elements), empty and truncated input, and
 * hostile input (entity expansion, deep nesting, huge values) which must be
 * rejected without crashing.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/s3_xml.h"

#define NS "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

static const char list_doc[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<ListBucketResult " NS ">"
	"<Name>bucket</Name><Prefix>d/</Prefix><KeyCount>2</KeyCount>"
	"<MaxKeys>2</MaxKeys><Delimiter>/</Delimiter>"
	"<IsTruncated>true</IsTruncated>"
	"<Contents><Key>d/a &amp; b</Key>"
	"<LastModified>2009-10-12T17:50:30.000Z</LastModified>"
	"<ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>"
	"<Size>434234</Size><StorageClass>STANDARD</StorageClass>"
	"<Owner><ID>x</ID></Owner><Unknown><Deep>1</Deep></Unknown>"
	"</Contents>"
	"<Contents><Key>d/\xc3\xbc</Key><Size>0</Size>"
	"<ETag>\"d41d8cd98f00b204e9800998ecf8427e\"</ETag>"
	"<LastModified>2026-11-22T10:00:00Z</LastModified></Contents>"
	"<CommonPrefixes><Prefix>d/sub/</Prefix></CommonPrefixes>"
	"<CommonPrefixes><Prefix>d/zz/</Prefix></CommonPrefixes>"
	"<NextContinuationToken>ZC/DvA==</NextContinuationToken>"
	"</ListBucketResult>";

static void test_list_good(void **state)
{
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	struct objfs_s3_error err;

	(void)state;
	assert_int_equal(objfs_s3_xml_parse_list(list_doc, strlen(list_doc),
						 &pg, &err), 0);
	assert_int_equal(pg.n_entries, 2);
	assert_string_equal(pg.entries[0].key, "d/a & b");
	assert_int_equal(pg.entries[0].size, 434234);
	assert_string_equal(pg.entries[0].etag,
			    "\"fba9dede5f27731c9771645a39863328\"");
	assert_int_equal(pg.entries[0].mtime.tv_sec, 1255369830);
	assert_string_equal(pg.entries[1].key, "d/\xc3\xbc");
	assert_int_equal(pg.entries[1].size, 0);
	assert_int_equal(pg.entries[1].mtime.tv_sec, 1795341600);
	assert_int_equal(pg.n_prefixes, 2);
	assert_string_equal(pg.prefixes[0], "d/sub/");
	assert_string_equal(pg.prefixes[1], "d/zz/");
	assert_non_null(pg.next);
	assert_string_equal(pg.next, "ZC/DvA==");
	objfs_list_page_release(&pg);
}

static void test_list_encoded_and_last_page(void **state)
{
	static const char doc[] =
		"<ListBucketResult><IsTruncated>false</IsTruncated>"
		"<Contents><Key>a%20b%2Bc%25d~e%3Df</Key><Size>1</Size></Contents>"
		"<Contents><Key>x+y</Key><Size>2</Size></Contents>"
		"<CommonPrefixes><Prefix>p%2F%C3%BC/</Prefix></CommonPrefixes>"
		"<NextContinuationToken>ignored</NextContinuationToken>"
		"<EncodingType>url</EncodingType></ListBucketResult>";
	static const char bad[] =
		"<ListBucketResult><EncodingType>url</EncodingType>"
		"<Contents><Key>a%zz</Key><Size>1</Size></Contents>"
		"</ListBucketResult>";
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;

	(void)state;
	assert_int_equal(objfs_s3_xml_parse_list(doc, strlen(doc), &pg, NULL),
			 0);
	assert_int_equal(pg.n_entries, 2);
	assert_string_equal(pg.entries[0].key, "a b+c%d~e=f");
	assert_string_equal(pg.entries[1].key, "x y");
	assert_string_equal(pg.prefixes[0], "p/\xc3\xbc/");
	assert_null(pg.next);
	objfs_list_page_release(&pg);
	assert_int_equal(objfs_s3_xml_parse_list(bad, strlen(bad), &pg, NULL),
			 EPROTO);
	assert_int_equal(pg.n_entries, 0);
	assert_null(pg.entries);
}

static void test_list_empty_and_bad(void **state)
{
	static const char empty_list[] =
		"<ListBucketResult " NS "><Name>b</Name><KeyCount>0</KeyCount>"
		"<IsTruncated>false</IsTruncated></ListBucketResult>";
	static const char *const bad[] = {
		"",
		"   ",
		"<ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key>",
		"<ListBucketResult><Contents><Key>a</Key><Size>1</Size>"
		"</Contents></ListBucketResul",
		"<ListBucketResult><Contents><Size>1</Size></Contents>"
		"</ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key><Size>-1</Size>"
		"</Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key>"
		"<Size>99999999999999999999999</Size></Contents>"
		"</ListBucketResult>",
		"<ListBucketResult><IsTruncated>true</IsTruncated>"
		"</ListBucketResult>",
		"<ListBucketResult><IsTruncated>maybe</IsTruncated>"
		"</ListBucketResult>",
		"<Other/>",
		"not xml at all",
		"<ListBucketResult></ListBucketResult><Extra/>",
	};
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	size_t i;

	(void)state;
	assert_int_equal(objfs_s3_xml_parse_list(empty_list,
						 strlen(empty_list), &pg,
						 NULL), 0);
	assert_int_equal(pg.n_entries, 0);
	assert_int_equal(pg.n_prefixes, 0);
	assert_null(pg.next);
	objfs_list_page_release(&pg);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = objfs_s3_xml_parse_list(bad[i], strlen(bad[i]), &pg,
						 NULL);

		assert_int_equal(rc, EPROTO);
		assert_null(pg.entries);
		assert_null(pg.prefixes);
		assert_null(pg.next);
	}
	/* Every truncation of a good document is rejected. */
	for (i = 0; i < strlen(list_doc); i++) {
		assert_int_equal(objfs_s3_xml_parse_list(list_doc, i, &pg,
							 NULL), EPROTO);
		assert_null(pg.entries);
	}
	assert_int_equal(objfs_s3_xml_parse_list(NULL, 0, &pg, NULL), EPROTO);
}

static void test_error_docs(void **state)
{
	static const char doc[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>"
		"<Code>NoSuchKey</Code><Message>The resource you requested "
		"does not exist</Message><Resource>/b/k</Resource>"
		"<RequestId>4442587FB7D0A2F9</RequestId></Error>";
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	struct objfs_s3_error err;
	char etag[OBJFS_ETAG_MAX];
	char *id = NULL;

	(void)state;
	assert_int_equal(objfs_s3_xml_parse_error(doc, strlen(doc), &err), 0);
	assert_string_equal(err.code, "NoSuchKey");
	assert_string_equal(err.message,
			    "The resource you requested does not exist");
	/* Any parser given an <Error> returns EREMOTEIO with the code. */
	assert_int_equal(objfs_s3_xml_parse_list(doc, strlen(doc), &pg, &err),
			 EREMOTEIO);
	assert_string_equal(err.code, "NoSuchKey");
	assert_int_equal(objfs_s3_xml_parse_initiate(doc, strlen(doc), &id,
						     &err), EREMOTEIO);
	assert_null(id);
	assert_int_equal(objfs_s3_xml_parse_error("<Error>", 7, &err), EPROTO);
	assert_int_equal(objfs_s3_xml_parse_error("<Foo/>", 6, &err), EPROTO);
	assert_int_equal(objfs_s3_xml_parse_error("", 0, &err), EPROTO);
	/* A long code is cut, never overflowed. */
	{
		char big[1024];

		snprintf(big, sizeof(big), "<Error><Code>%0300d</Code></Error>",
			 7);
		assert_int_equal(objfs_s3_xml_parse_error(big, strlen(big),
							  &err), 0);
		assert_int_equal(strlen(err.code), sizeof(err.code) - 1);
		(void)etag;
	}
}

static void test_initiate_and_etags(void **state)
{
	static const char init[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
		"<InitiateMultipartUploadResult " NS "><Bucket>b</Bucket>"
		"<Key>k</Key><UploadId>VXBsb2FkIElE</UploadId>"
		"</InitiateMultipartUploadResult>";
	static const char complete[] =
		"<CompleteMultipartUploadResult " NS "><Location>x</Location>"
		"<Bucket>b</Bucket><Key>k</Key>"
		"<ETag>\"3858f62230ac3c915f300c664312c11f-9\"</ETag>"
		"</CompleteMultipartUploadResult>";
	/* 200 OK whose body is an error (after whitespace keep-alives). */
	static const char complete_err[] =
		"\n\n\n<Error><Code>InternalError</Code><Message>We "
		"encountered an internal error.</Message></Error>";
	static const char copy[] =
		"<CopyObjectResult><LastModified>2009-10-28T22:32:00Z"
		"</LastModified><ETag>\"9b2cf535f27731c974343645a3985328\""
		"</ETag></CopyObjectResult>";
	static const char part[] =
		"<s3:CopyPartResult xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<s3:ETag>\"b\"</s3:ETag></s3:CopyPartResult>";
	struct objfs_s3_error err;
	char etag[OBJFS_ETAG_MAX];
	char *id = NULL;

	(void)state;
	assert_int_equal(objfs_s3_xml_parse_initiate(init, strlen(init), &id,
						     &err), 0);
	assert_string_equal(id, "VXBsb2FkIElE");
	free(id);
	assert_int_equal(objfs_s3_xml_parse_initiate(
		"<InitiateMultipartUploadResult/>", 32, &id, &err), EPROTO);
	assert_null(id);

	assert_int_equal(objfs_s3_xml_parse_etag(
		complete, strlen(complete), "CompleteMultipartUploadResult",
		etag, &err), 0);
	assert_string_equal(etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
	assert_int_equal(objfs_s3_xml_parse_etag(
		complete_err, strlen(complete_err),
		"CompleteMultipartUploadResult", etag, &err), EREMOTEIO);
	assert_string_equal(err.code, "InternalError");
	assert_int_equal(objfs_s3_xml_parse_etag(copy, strlen(copy),
						 "CopyObjectResult", etag,
						 &err), 0);
	assert_string_equal(etag, "\"9b2cf535f27731c974343645a3985328\"");
	assert_int_equal(objfs_s3_xml_parse_etag(part, strlen(part),
						 "CopyPartResult", etag,
						 &err), 0);
	assert_string_equal(etag, "\"b\"");
	/* Ceph RGW 16: copy results without quotes (added), an empty ETag
	 * in CompleteMultipartUploadResult (""). */
	assert_int_equal(objfs_s3_xml_parse_etag(
		"<CopyObjectResult><ETag>9b2c</ETag></CopyObjectResult>", 54,
		"CopyObjectResult", etag, &err), 0);
	assert_string_equal(etag, "\"9b2c\"");
	assert_int_equal(objfs_s3_xml_parse_etag(
		"<CompleteMultipartUploadResult><ETag></ETag>"
		"</CompleteMultipartUploadResult>", 76,
		"CompleteMultipartUploadResult", etag, &err), 0);
	assert_string_equal(etag, "");
	/* Wrong root, missing ETag, truncated. */
	assert_int_equal(objfs_s3_xml_parse_etag(copy, strlen(copy),
						 "CopyPartResult", etag,
						 &err), EPROTO);
	assert_int_equal(objfs_s3_xml_parse_etag(
		"<CopyObjectResult></CopyObjectResult>", 37,
		"CopyObjectResult", etag, &err), EPROTO);
	assert_int_equal(objfs_s3_xml_parse_etag(copy, 40, "CopyObjectResult",
						 etag, &err), EPROTO);
}

static void test_delete_result(void **state)
{
	static const char ok[] =
		"<DeleteResult " NS "><Deleted><Key>a</Key></Deleted>"
		"<Error><Key>gone</Key><Code>NoSuchKey</Code></Error>"
		"</DeleteResult>";
	static const char some[] =
		"<DeleteResult><Error><Key>a</Key><Code>AccessDenied</Code>"
		"<Message>no</Message></Error><Error><Key>b</Key>"
		"<Code>InternalError</Code></Error></DeleteResult>";
	struct objfs_s3_error err;
	size_t failed = 99;

	(void)state;
	assert_int_equal(objfs_s3_xml_parse_delete(ok, strlen(ok), &failed,
						   &err), 0);
	assert_int_equal(failed, 0);
	assert_int_equal(objfs_s3_xml_parse_delete(some, strlen(some), &failed,
						   &err), 0);
	assert_int_equal(failed, 2);
	assert_string_equal(err.code, "AccessDenied");
	assert_int_equal(objfs_s3_xml_parse_delete("<DeleteResult/>", 15,
						   &failed, &err), 0);
	assert_int_equal(failed, 0);
	assert_int_equal(objfs_s3_xml_parse_delete(some, 30, &failed, &err),
			 EPROTO);
}

static void test_hostile(void **state)
{
	static const char laughs[] =
		"<?xml version=\"1.0\"?>"
		"<!DOCTYPE lolz [<!ENTITY lol \"lol\">"
		"<!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
		"<!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">"
		"<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">"
		"<!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">"
		"<!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;\">"
		"<!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;\">"
		"<!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;\">"
		"<!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;\">"
		"<!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;\">"
		"]><ListBucketResult><Contents><Key>&lol9;</Key><Size>1</Size>"
		"</Contents></ListBucketResult>";
	static const char external[] =
		"<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY x SYSTEM "
		"\"file:///etc/passwd\">]><Error><Code>&x;</Code></Error>";
	static const char undeclared[] =
		"<ListBucketResult><Contents><Key>&nope;</Key><Size>1</Size>"
		"</Contents></ListBucketResult>";
	struct objfs_list_page pg = OBJFS_LIST_PAGE_INIT;
	struct objfs_s3_error err;
	char *deep, *huge;
	size_t i, n;

	(void)state;
	assert_int_equal(objfs_s3_xml_parse_list(laughs, strlen(laughs), &pg,
						 NULL), EPROTO);
	assert_null(pg.entries);
	assert_int_equal(objfs_s3_xml_parse_error(external, strlen(external),
						  &err), EPROTO);
	assert_int_equal(objfs_s3_xml_parse_list(undeclared,
						 strlen(undeclared), &pg,
						 NULL), EPROTO);

	/* 100,000 nested elements. */
	n = 100000;
	deep = malloc(n * 3 + 64);
	assert_non_null(deep);
	strcpy(deep, "<ListBucketResult>");
	for (i = 0; i < n; i++)
		memcpy(deep + 18 + i * 3, "<a>", 3);
	deep[18 + n * 3] = '\0';
	assert_int_equal(objfs_s3_xml_parse_list(deep, strlen(deep), &pg,
						 NULL), EPROTO);
	free(deep);

	/* A 1 MiB key. */
	n = 1 << 20;
	huge = malloc(n + 128);
	assert_non_null(huge);
	strcpy(huge, "<ListBucketResult><Contents><Key>");
	memset(huge + strlen(huge), 'k', n);
	strcpy(huge + 33 + n, "</Key><Size>1</Size></Contents></ListBucketResult>");
	assert_int_equal(objfs_s3_xml_parse_list(huge, strlen(huge), &pg,
						 NULL), EPROTO);
	/* Over the document cap. */
	assert_int_equal(objfs_s3_xml_parse_list(huge,
						 OBJFS_S3_XML_MAX_DOC + 1u,
						 &pg, NULL), EPROTO);
	free(huge);
	assert_null(pg.entries);
}

static void test_build_complete(void **state)
{
	struct objfs_part parts[3] = {
		{ 1, "\"a\"" }, { 2, "\"b&<c>\"" }, { 10000, "e" },
	};
	char *doc = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(objfs_s3_xml_build_complete(parts, 3, &doc, &len), 0);
	assert_int_equal(len, strlen(doc));
	assert_string_equal(doc,
		"<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/"
		"2006-03-01/\"><Part><PartNumber>1</PartNumber><ETag>&quot;a"
		"&quot;</ETag></Part><Part><PartNumber>2</PartNumber><ETag>"
		"&quot;b&amp;&lt;c&gt;&quot;</ETag></Part><Part><PartNumber>"
		"10000</PartNumber><ETag>e</ETag></Part>"
		"</CompleteMultipartUpload>");
	free(doc);
	assert_int_equal(objfs_s3_xml_build_complete(parts, 0, &doc, &len),
			 EINVAL);
	parts[1].number = 1; /* not increasing */
	assert_int_equal(objfs_s3_xml_build_complete(parts, 3, &doc, &len),
			 EINVAL);
	assert_null(doc);
	/* The maximum part count fits the precomputed bound. */
	{
		struct objfs_part *many = calloc(OBJFS_MPU_MAX_PARTS,
						 sizeof(*many));
		size_t i;

		assert_non_null(many);
		for (i = 0; i < OBJFS_MPU_MAX_PARTS; i++) {
			many[i].number = (unsigned)i + 1;
			memset(many[i].etag, '&', OBJFS_ETAG_MAX - 1);
		}
		assert_int_equal(objfs_s3_xml_build_complete(
			many, OBJFS_MPU_MAX_PARTS, &doc, &len), 0);
		free(doc);
		assert_int_equal(objfs_s3_xml_build_complete(
			many, OBJFS_MPU_MAX_PARTS + 1, &doc, &len), EINVAL);
		free(many);
	}
}

static void test_build_delete(void **state)
{
	const char *keys[] = { "a b", "x&y<z>'\"", "t\tn\nr\r" };
	const char *bad[] = { "ok", "bell\a" };
	char *doc = NULL;
	size_t len;
	char esc[8];

	(void)state;
	assert_int_equal(objfs_s3_xml_build_delete(keys, 3, &doc, &len), 0);
	assert_string_equal(doc,
		"<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Quiet>true</Quiet><Object><Key>a b</Key></Object><Object>"
		"<Key>x&amp;y&lt;z&gt;&apos;&quot;</Key></Object><Object><Key>"
		"t&#9;n&#10;r&#13;</Key></Object></Delete>");
	free(doc);
	assert_int_equal(objfs_s3_xml_build_delete(bad, 2, &doc, &len),
			 EILSEQ);
	assert_null(doc);
	assert_int_equal(objfs_s3_xml_build_delete(keys, 0, &doc, &len),
			 EINVAL);
	assert_int_equal(objfs_s3_xml_escape("&&", esc, sizeof(esc)), E2BIG);
	assert_int_equal(objfs_s3_xml_escape("&", esc, sizeof(esc)), 0);
	assert_string_equal(esc, "&amp;");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_good),
		cmocka_unit_test(test_list_encoded_and_last_page),
		cmocka_unit_test(test_list_empty_and_bad),
		cmocka_unit_test(test_error_docs),
		cmocka_unit_test(test_initiate_and_etags),
		cmocka_unit_test(test_delete_result),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_build_complete),
		cmocka_unit_test(test_build_delete),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
