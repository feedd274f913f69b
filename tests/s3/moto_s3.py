"""An S3 API server for the attachments' tests: PyPI's moto in server
mode, on 127.0.0.1 at the port given, with the bucket given created.
Prints "s3 ready" once it answers. Usage: moto_s3.py PORT BUCKET"""

import sys
import time

import boto3
from moto.server import ThreadedMotoServer

port, bucket = int(sys.argv[1]), sys.argv[2]
server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
server.start()
boto3.client(
    "s3",
    endpoint_url=f"http://127.0.0.1:{port}",
    region_name="us-east-1",
    aws_access_key_id="test",
    aws_secret_access_key="test",
).create_bucket(Bucket=bucket)
print("s3 ready", flush=True)
try:
    while True:
        time.sleep(3600)
except KeyboardInterrupt:
    server.stop()
