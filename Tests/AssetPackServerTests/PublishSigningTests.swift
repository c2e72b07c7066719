import AssetPackFormat
import Foundation
import Testing

@testable import AssetPackServer

/// `publish`'s request signing and its settings, against what AWS documents and what botocore (the AWS SDK
/// for Python) computes for the same requests.
@Suite("publish: signing and settings")
struct PublishSigningTests {
    func authorization(_ headers: [(String, String)]) -> String? {
        headers.first { $0.0 == "authorization" }?.1
    }

    /// AWS's worked example of a signed GET (the S3 API reference, "Signature Calculations for the
    /// Authorization Header", Example: GET Object), whose signature every SDK's tests check.
    @Test func signsAWSsDocumentedGETObjectExample() {
        let signer = S3Signer(
            credentials: S3Credentials(
                accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                source: "test"
            ),
            region: "us-east-1"
        )
        let headers = signer.signedHeaders(
            method: "GET",
            path: "/test.txt",
            query: [],
            headers: [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9")],
            payloadSHA256: S3Signer.emptyPayload,
            date: Date(timeIntervalSince1970: 1_369_353_600)
        )
        #expect(
            authorization(headers)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
        #expect(headers.contains { $0 == ("x-amz-date", "20130524T000000Z") })
    }

    /// A PUT of a non-ASCII key with a session token, and a list whose prefix has a space, a slash and an
    /// umlaut: the signatures botocore 1.43 computes for the same requests (`S3SigV4Auth`, fixed time).
    @Test func signsAsBotocoreDoesForNonASCIIKeysQueriesAndSessionTokens() {
        let date = Date(timeIntervalSince1970: 1_795_799_700)  // 20261127T171500Z
        var credentials = S3Credentials(
            accessKeyID: "AKIDEXAMPLE",
            secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            sessionToken: "TOKEN/with+slash=",
            source: "test"
        )
        let path = "/packs-test/" + S3Signer.encode("game/packs/Über 🎮/1-abc", keepingSlashes: true)
        #expect(path == "/packs-test/game/packs/%C3%9Cber%20%F0%9F%8E%AE/1-abc")
        let put = S3Signer(credentials: credentials, region: "eu-west-1").signedHeaders(
            method: "PUT",
            path: path,
            query: [],
            headers: [
                ("host", "127.0.0.1:9000"), ("content-type", "application/octet-stream"),
                ("cache-control", "public, max-age=31536000, immutable"), ("content-length", "5"),
            ],
            payloadSHA256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
            date: date
        )
        #expect(
            authorization(put)?.hasSuffix("7236476c79e470fd43f73dc4353ff2699cb21e83e1952f31ce81ffa9f1b66c8a") == true
        )
        #expect(
            authorization(put)?.contains(
                "SignedHeaders=cache-control;content-length;content-type;host;x-amz-content-sha256;x-amz-date;"
                    + "x-amz-security-token,"
            ) == true
        )
        #expect(put.contains { $0 == ("x-amz-security-token", "TOKEN/with+slash=") })

        credentials.sessionToken = nil
        let list = S3Signer(credentials: credentials, region: "eu-west-1").signedHeaders(
            method: "GET",
            path: "/packs-test",
            query: [("prefix", "Über/x y"), ("list-type", "2"), ("max-keys", "1")],
            headers: [("host", "127.0.0.1:9000")],
            payloadSHA256: S3Signer.emptyPayload,
            date: date
        )
        #expect(
            authorization(list)?.hasSuffix("03519849c65fb6e805250d4b87222d7026036d41d87b07fbc214f448f03a7aa6") == true
        )
    }

    @Test func credentialsAreFoundWhereTheAWSCLILooksAndTheSecretIsNeverShown() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("publish-settings-\(UUID())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let credentialsFile = scratch.appendingPathComponent("credentials").path
        let configFile = scratch.appendingPathComponent("config").path
        try """
        [default]
        aws_access_key_id = AKIADEFAULT
        aws_secret_access_key = default-secret
        # a comment
        [ci]
        aws_access_key_id=AKIACI
        aws_secret_access_key=ci-secret
        aws_session_token = ci-token
        """.write(toFile: credentialsFile, atomically: true, encoding: .utf8)
        try """
        [default]
        region = eu-central-1
        [profile ci]
        region = ap-south-1
        endpoint_url = http://127.0.0.1:9000
        """.write(toFile: configFile, atomically: true, encoding: .utf8)
        let files = ["AWS_SHARED_CREDENTIALS_FILE": credentialsFile, "AWS_CONFIG_FILE": configFile]

        let fromDefault = try S3Settings.load(environment: files)
        #expect(fromDefault.credentials?.accessKeyID == "AKIADEFAULT")
        #expect(fromDefault.region == "eu-central-1")
        #expect(fromDefault.endpointURL == nil)

        let fromProfile = try S3Settings.load(environment: files.merging(["AWS_PROFILE": "ci"]) { $1 })
        #expect(fromProfile.credentials?.secretAccessKey == "ci-secret")
        #expect(fromProfile.credentials?.sessionToken == "ci-token")
        #expect(fromProfile.region == "ap-south-1")
        #expect(fromProfile.endpointURL == "http://127.0.0.1:9000")

        // The environment's keys and region come first, as the AWS CLI takes them.
        let fromEnvironment = try S3Settings.load(
            environment: files.merging([
                "AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_REGION": "us-west-2",
            ]) { $1 },
            profile: "ci"
        )
        #expect(fromEnvironment.credentials?.accessKeyID == "AKIAENV")
        #expect(fromEnvironment.credentials?.sessionToken == nil)
        #expect(fromEnvironment.region == "us-west-2")

        for credentials in [fromDefault.credentials, fromProfile.credentials, fromEnvironment.credentials] {
            let shown = "\(credentials as Any) \(String(reflecting: credentials))"
            #expect(!shown.contains("secret") && !shown.contains("ci-token"), "\(shown)")
        }

        #expect {
            try S3Settings.load(environment: files, profile: "nope")
        } throws: { error in
            (error as? PublishError)?.code == .credentials && "\(error)".contains("no profile \"nope\"")
        }
    }

    @Test(arguments: [
        ("s3://packs-test/game/v1/", "packs-test", "game/v1"),
        ("s3://packs-test", "packs-test", ""),
        ("s3://my.bucket-1//a//b", "my.bucket-1", "a/b"),
    ])
    func destinationsAreReadIntoBucketAndPrefix(text: String, bucket: String, prefix: String) throws {
        let destination = try Publisher.destination(text)
        #expect(destination.bucket == bucket)
        #expect(destination.prefix == prefix)
    }

    @Test(arguments: [
        "packs-test/game", "s3://", "s3://UPPER/x", "s3://ab", "s3://-dash/x", "https://bucket/x",
        "s3://packs-test/a/../b",
        "s3://packs-test/./x",
    ])
    func destinationsThatAreNotS3BucketsAreRefused(text: String) {
        #expect {
            try Publisher.destination(text)
        } throws: { error in
            (error as? PublishError)?.code == .invalidDestination
        }
    }
}
