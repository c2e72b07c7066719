#!/usr/bin/env python3
"""An S3-compatible store on loopback for publish's tests and bench: moto's standalone server (PyPI moto).

  s3-store.py serve [--auth|--public] BUCKET...
                                         start on 127.0.0.1, port 0; create the buckets; print one JSON line
                                         (endpoint, access key); run until killed. --auth: the key is a user's
                                         allowed everything, and moto checks every request's SigV4 signature
                                         (any key passes without it). --public: a bucket policy lets anyone GET
                                         objects, as a public bucket or a CDN's origin does
  s3-store.py objects ENDPOINT BUCKET    print every object of BUCKET as one JSON line each, read with boto3 (an
                                         independent client): key, size, Cache-Control, Content-Type, the SHA-256
                                         of its bytes. Credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY.
"""
import hashlib
import json
import os
import sys
import threading


def serve(args):
    auth = "--auth" in args
    public = "--public" in args
    buckets = [a for a in args if a not in ("--auth", "--public")]
    if auth:
        # The first three requests (the user, its key, its policy) are let through unsigned; every later one
        # must be signed by a key moto knows.
        os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = "http://127.0.0.1:%d" % server._server.server_port
    key, secret = "test", "test"
    if auth:
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        iam.create_user(UserName="publisher")
        created = iam.create_access_key(UserName="publisher")["AccessKey"]
        iam.put_user_policy(UserName="publisher", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        key, secret = created["AccessKeyId"], created["SecretAccessKey"]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id=key, aws_secret_access_key=secret)
    for bucket in buckets:
        s3.create_bucket(Bucket=bucket)
        if public:
            s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                "Resource": "arn:aws:s3:::%s/*" % bucket}]}))
    print(json.dumps({"endpoint": endpoint, "accessKeyID": key, "secretAccessKey": secret}), flush=True)
    threading.Event().wait()


def objects(endpoint, bucket):
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            got = s3.get_object(Bucket=bucket, Key=item["Key"])
            body = got["Body"].read()
            print(json.dumps({
                "key": item["Key"], "size": len(body), "cacheControl": got.get("CacheControl"),
                "contentType": got.get("ContentType"), "sha256": hashlib.sha256(body).hexdigest(),
                "metadata": got.get("Metadata", {}),
            }, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "objects":
        objects(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
