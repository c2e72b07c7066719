/// An error of `ba-mock publish`: what the store answered or why nothing was sent, with the fix.
public struct PublishError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Hashable, Codable {
        /// No credentials were found, or the store refused them (`InvalidAccessKeyId`, `SignatureDoesNotMatch`).
        case credentials
        /// The credentials are known but may not do this (`AccessDenied`).
        case accessDenied
        /// The bucket does not exist (`NoSuchBucket`).
        case noSuchBucket
        /// The destination, endpoint or base URL given is not usable.
        case invalidDestination
        /// The folder and the archives given cannot be published together (two are one pack).
        case invalidInput
        /// The store is out of space (507, `XMinioStorageFull`, `QuotaExceeded`).
        case storeFull
        /// The store kept answering 5xx or 429 after every retry.
        case unavailable
        /// The store could not be reached, or the connection broke, after every retry.
        case network
        /// The store refused a request for another reason.
        case refused
        /// An object is not there, or not with the size and SHA-256 that were uploaded.
        case notConfirmed
        /// A file to upload could not be read.
        case io
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, for the user (later sentences may be added: the attempts made, what was left alone).
    public var message: String
    /// How to fix it, printed after the message.
    public var fix: String?
    /// The HTTP status the store answered, if it answered.
    public var status: Int?
    /// The store's own error code (`NoSuchBucket`, `SlowDown`, ...), if it sent one.
    public var storeCode: String?

    /// Creates an error.
    public init(code: Code, message: String, fix: String? = nil, status: Int? = nil, storeCode: String? = nil) {
        self.code = code
        self.message = message
        self.fix = fix
        self.status = status
        self.storeCode = storeCode
    }

    public var description: String { message + (fix.map { ". Fix: \($0)" } ?? "") }
}
