import AssetPackFormat
import Crypto
import Foundation

/// Signs S3 requests with AWS Signature Version 4, in the `Authorization` header, as the AWS SDKs do: the
/// canonical request (method, URI-encoded path, sorted query, sorted lower-case headers, payload SHA-256),
/// the string to sign, and the HMAC chain from the secret key through date, region and service.
///
/// The payload is always signed by its SHA-256 (never `UNSIGNED-PAYLOAD`): a store that checks it refuses a
/// body that changed on the way (`XAmzContentSHA256Mismatch`).
struct S3Signer: Sendable {
    /// The credentials to sign with.
    var credentials: S3Credentials
    /// The region in the credential scope (`us-east-1` where a store has none).
    var region: String
    /// The service in the credential scope.
    var service = "s3"

    /// The SHA-256 of an empty payload, in hex.
    static let emptyPayload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The headers to add to a request so that it is signed: `x-amz-date`, `x-amz-content-sha256`,
    /// `x-amz-security-token` (with a session token) and `authorization`.
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The path as sent, already URI-encoded (``S3Signer/encode(_:keepingSlashes:)``).
    ///   - query: The query's names and values, not encoded.
    ///   - headers: Every other header sent (`host` among them), signed all.
    ///   - payloadSHA256: The body's SHA-256 in hex.
    ///   - date: The signing time.
    func signedHeaders(
        method: String,
        path: String,
        query: [(String, String)],
        headers: [(String, String)],
        payloadSHA256: String,
        date: Date
    ) -> [(String, String)] {
        let stamp = HTTPDate.basicISO8601(date)
        let day = String(stamp.prefix(8))
        var added = [("x-amz-date", stamp), ("x-amz-content-sha256", payloadSHA256)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        // Lower-case names, values trimmed and inner runs of spaces folded, sorted by name.
        let canonical = (headers + added).map { name, value in
            (name.lowercased(), value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " "))
        }.sorted { $0.0 < $1.0 }
        let signedNames = canonical.map(\.0).joined(separator: ";")
        let canonicalQuery = query.map { (Self.encode($0.0), Self.encode($0.1)) }
            .sorted { $0 < $1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
        let canonicalRequest = [
            method,
            path,
            canonicalQuery,
            canonical.map { "\($0.0):\($0.1)\n" }.joined(),
            signedNames,
            payloadSHA256,
        ].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", stamp, scope, SHA256.hash(data: Data(canonicalRequest.utf8)).hexString,
        ].joined(separator: "\n")
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key).hexString
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedNames), "
            + "Signature=\(signature)"
        return added + [("authorization", authorization)]
    }

    /// Percent-encodes the UTF-8 bytes of `text` as SigV4 wants: every byte but `A-Z a-z 0-9 - . _ ~` (and `/`
    /// when `keepingSlashes`, for a path) as `%XX` in upper case.
    static func encode(_ text: String, keepingSlashes: Bool = false) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlashes:
                out.append("/")
            default:
                let digits = Array("0123456789ABCDEF")
                out += "%\(digits[Int(byte >> 4)])\(digits[Int(byte & 15)])"
            }
        }
        return out
    }
}
