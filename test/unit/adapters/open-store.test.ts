import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../functions/adapters/local-object-store.js';
import { defaultS3ClientConfig, openStore } from '../../../functions/adapters/open-store.js';
import { S3ObjectStore } from '../../../functions/adapters/s3-object-store.js';
import { InvalidInputError } from '../../../functions/core/errors.js';

describe('openStore', () => {
  let folder: string;
  const s3Client = new S3Client({ region: 'us-east-1' });

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'open-store-'));
    await writeFile(join(folder, 'a-file.txt'), 'x');
  });

  afterAll(async () => {
    s3Client.destroy();
    await rm(folder, { recursive: true, force: true });
  });

  it.each([
    ['s3://lake/events/date=2024-01-15', 'events/date=2024-01-15/'],
    ['s3://lake/events/', 'events/'],
    ['s3://lake', ''],
    ['s3://lake/', ''],
    ['s3a://lake/t', 't/'],
  ])('opens %s as the S3 bucket "lake" with prefix "%s"', (uri, prefix) => {
    // Act
    const opened = openStore(uri, { s3Client });
    // Assess
    expect(opened.store).toBeInstanceOf(S3ObjectStore);
    expect(opened.store.description).toBe('s3://lake');
    expect(opened.prefix).toBe(prefix);
    expect(opened.uri).toBe(uri);
  });

  it.each([
    ['s3://', /not a bucket name/],
    ['s3:///prefix', /not a bucket name/],
    ['s3://Bad_Bucket/x', /not a bucket name/],
    ['gs://lake/x', /scheme gs:\/\/ is not supported/],
    ['', /Empty store location/],
  ])('refuses %j with an InvalidInputError that says what is expected', (uri, message) => {
    // Act
    const act = () => openStore(uri, { s3Client });
    // Assess
    expect(act).toThrow(InvalidInputError);
    expect(act).toThrow(message);
  });

  it('opens an absolute folder, a relative one and a file:// URL as a local store with an empty prefix', () => {
    // Act
    const absolute = openStore(folder);
    const relativePath = openStore(relative(process.cwd(), folder));
    const fileUrl = openStore(pathToFileURL(folder).href);
    // Assess
    for (const opened of [absolute, relativePath, fileUrl]) {
      expect(opened.store).toBeInstanceOf(LocalObjectStore);
      expect((opened.store as LocalObjectStore).root).toBe(folder);
      expect(opened.prefix).toBe('');
    }
  });

  it('refuses a local path that does not exist, or is a file, saying so', () => {
    // Act
    const missing = () => openStore(join(folder, 'no-such-folder'));
    const file = () => openStore(join(folder, 'a-file.txt'));
    // Assess
    expect(missing).toThrow(InvalidInputError);
    expect(missing).toThrow(/does not exist/);
    expect(file).toThrow(/is not a folder/);
  });
});

describe('defaultS3ClientConfig', () => {
  it('uses the standard chain untouched when no endpoint override or region is set, with the middleware cached', () => {
    // Act
    const config = defaultS3ClientConfig({});
    // Assess
    expect(config).toEqual({ cacheMiddleware: true });
  });

  it('takes the region from AWS_REGION, else AWS_DEFAULT_REGION, as the state table client does', () => {
    // Act
    const both = defaultS3ClientConfig({ AWS_REGION: 'eu-west-1', AWS_DEFAULT_REGION: 'us-west-2' });
    const legacy = defaultS3ClientConfig({ AWS_DEFAULT_REGION: 'us-west-2' });
    // Assess
    expect(both).toEqual({ cacheMiddleware: true, region: 'eu-west-1' });
    expect(legacy).toEqual({ cacheMiddleware: true, region: 'us-west-2' });
  });

  it('switches to path style and WHEN_REQUIRED checksums for AWS_ENDPOINT_URL_S3, preferring it over AWS_ENDPOINT_URL', () => {
    // Act
    const config = defaultS3ClientConfig({
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4568',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9999',
    });
    // Assess
    expect(config).toEqual({
      cacheMiddleware: true,
      endpoint: 'http://127.0.0.1:4568',
      region: 'us-east-1',
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  });

  it('honours AWS_ENDPOINT_URL and the configured region for local servers', () => {
    // Act
    const config = defaultS3ClientConfig({
      AWS_ENDPOINT_URL: 'http://localhost:9000',
      AWS_REGION: 'eu-central-1',
    });
    // Assess
    expect(config).toMatchObject({
      endpoint: 'http://localhost:9000',
      region: 'eu-central-1',
      forcePathStyle: true,
    });
  });
});
