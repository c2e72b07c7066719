import Foundation
import NIOHTTP1

extension S3Bucket {
    /// The error for an answer that is not a success: the store's own code (from its XML body) decides the
    /// kind, and the message says what to do.
    static func error(_ response: Response, method: String, object: String, _ bucket: S3Bucket) -> PublishError {
        let body = String(decoding: response.body, as: UTF8.self)
        let code = element("Code", in: body)
        let said = element("Message", in: body).map { ": \($0)" } ?? ""
        let answer = "\(response.status)\(code.map { " \($0)" } ?? "")\(said)"
        let credentials = bucket.signer.credentials
        func error(_ kind: PublishError.Code, _ message: String, fix: String?) -> PublishError {
            PublishError(code: kind, message: message, fix: fix, status: response.status, storeCode: code)
        }
        let store = "the store at \(bucket.endpoint.text)"
        switch (response.status, code) {
        case (403, "InvalidAccessKeyId"), (403, "SignatureDoesNotMatch"), (403, "InvalidToken"),
            (400, "ExpiredToken"), (403, "ExpiredToken"), (400, "InvalidToken"):
            return error(
                .credentials,
                "\(store) refused \(credentials) (\(answer))",
                fix: "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the profile), and that --endpoint-url and "
                    + "--region are the store's"
            )
        case (403, _):
            return error(
                .accessDenied,
                "\(credentials) may not \(method) \(object) (\(answer))",
                fix: "allow it s3:ListBucket, s3:GetObject and s3:PutObject on the bucket"
            )
        case (404, "NoSuchBucket"):
            return error(
                .noSuchBucket,
                "there is no bucket \"\(bucket.bucket)\" at \(bucket.endpoint.text)",
                fix: "create it (aws s3 mb s3://\(bucket.bucket)), or check the bucket's name and --endpoint-url"
            )
        case (301, _), (400, "AuthorizationHeaderMalformed"), (400, "IllegalLocationConstraintException"):
            let region = response.headers.first(name: "x-amz-bucket-region")
            return error(
                .invalidDestination,
                "\(store) answered \(method) \(object) with \(answer): the bucket is in another region"
                    + (region.map { " (\($0))" } ?? ""),
                fix: "--region \(region ?? "REGION")"
            )
        case (507, _), (_, "XMinioStorageFull"), (_, "QuotaExceeded"), (_, "StorageQuotaExceeded"):
            return error(
                .storeFull,
                "\(store) is full: \(method) \(object) answered \(answer)",
                fix: "free space in the store, or raise its quota"
            )
        case (429, _), (500..., _):
            return error(.unavailable, "\(store) answered \(method) \(object) with \(answer)", fix: "try again later")
        default:
            return error(.refused, "\(store) refused \(method) \(object): \(answer)", fix: nil)
        }
    }

    /// The text of the first `<name>...</name>` in an S3 error body (no entity in the codes; messages keep the
    /// five XML entities decoded).
    static func element(_ name: String, in body: String) -> String? {
        guard let open = body.range(of: "<\(name)>"),
            let close = body.range(of: "</\(name)>", range: open.upperBound..<body.endIndex)
        else { return nil }
        let text = body[open.upperBound..<close.lowerBound]
        let decoded = text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
        return decoded.isEmpty ? nil : decoded
    }
}
