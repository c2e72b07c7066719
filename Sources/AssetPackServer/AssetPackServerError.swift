import AssetPackFormat
import HTTPTypes

/// An error of the mock server: at start-up (bad folder, bad TLS files, port in use) or for one request.
public struct AssetPackServerError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Hashable {
        /// The asset folder does not exist or holds no manifests.
        case noAssetFolder
        /// One or more manifests in the folder are invalid; ``AssetPackServerError/problems`` lists them.
        case invalidAssetFolder
        /// No pack has that ID (or the ID is not a valid pack ID).
        case packNotFound
        /// No route matches the request path.
        case routeNotFound
        /// The Range header asks for bytes the pack does not have.
        case rangeNotSatisfiable
        /// TLS files are missing or unreadable, or a certificate could not be made.
        case tls
        /// An option is invalid.
        case invalidOption
        /// The state folder could not be read or written.
        case state
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence for the user: what went wrong and how to fix it.
    public var message: String
    /// Every manifest problem found, for `.invalidAssetFolder`.
    public var problems: [AssetPackFormatError]
    /// The error underneath, if any.
    public var cause: (any Error & Sendable)?
    /// `Content-Range` for a 416 answer.
    var contentRange: String?

    /// Creates an error.
    public init(
        code: Code,
        message: String,
        problems: [AssetPackFormatError] = [],
        cause: (any Error & Sendable)? = nil
    ) {
        self.init(code: code, message: message, problems: problems, cause: cause, contentRange: nil)
    }

    init(
        code: Code,
        message: String,
        problems: [AssetPackFormatError] = [],
        cause: (any Error & Sendable)? = nil,
        contentRange: String?
    ) {
        self.contentRange = contentRange
        self.code = code
        self.message = message
        self.problems = problems
        self.cause = cause
    }

    public var description: String {
        var text = message
        for problem in problems { text += "\n  - \(problem)" }
        if let cause { text += " (\(cause))" }
        return text
    }

    /// The HTTP status a request failing with this error gets.
    var status: HTTPResponse.Status {
        switch code {
        case .packNotFound, .routeNotFound: .notFound
        case .rangeNotSatisfiable: .rangeNotSatisfiable
        default: .internalServerError
        }
    }
}
