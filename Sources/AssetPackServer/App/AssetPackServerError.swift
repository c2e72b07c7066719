import AssetPackFormat
import Foundation
import HTTPTypes
import NIOCore

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
        /// The pack is being built and not published yet: ask again shortly (503 with `Retry-After`).
        case packBuilding
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
        case .invalidOption: .badRequest
        case .packBuilding: .serviceUnavailable
        default: .internalServerError
        }
    }
}

extension AssetPackServerError {
    /// Says what to do when the server could not start listening; other errors pass through unchanged.
    /// - Parameters:
    ///   - error: What starting the server threw.
    ///   - host: The address asked for.
    ///   - port: The port asked for.
    /// - Returns: An ``AssetPackServerError`` with code `.invalidOption` for a port in use, a privileged port
    ///   or an address this machine does not have; `error` otherwise.
    public static func listening(_ error: any Error, host: String, port: Int) -> any Error {
        let errno: Int32?
        if let io = error as? IOError {
            errno = io.errnoCode
        } else {
            errno = nil
        }
        let message: String
        switch errno {
        case EADDRINUSE:
            message =
                "port \(port) on \(host) is already in use. Fix: stop the other server, or pass --port 0 to let "
                + "the system choose a free port"
        case EACCES:
            message = "not allowed to listen on port \(port). Fix: use a port above 1023, e.g. --port 8443"
        case EADDRNOTAVAIL:
            message = "\(host) is not an address of this machine. Fix: use 127.0.0.1, or an address `ip addr` lists"
        default:
            if error is SocketAddressError || error is SocketAddressError.UnknownHost {
                message = "cannot resolve --host \(host). Fix: use an IP address or a name this machine resolves"
            } else {
                return error
            }
        }
        return AssetPackServerError(code: .invalidOption, message: message, cause: error)
    }
}
