import Foundation

/// An access key for an S3 store, found where the AWS CLI and SDKs look. Its description never shows the
/// secret (nor the session token), so a log or an error message cannot leak it.
public struct S3Credentials: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The access key ID (`AKIA...`).
    public var accessKeyID: String
    /// The secret access key.
    public var secretAccessKey: String
    /// The session token of temporary credentials.
    public var sessionToken: String?
    /// Where they were found: `environment`, or a file and profile.
    public var source: String

    /// Creates credentials.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, source: String) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.source = source
    }

    public var description: String { "access key \(accessKeyID) (from \(source))" }
    public var debugDescription: String { description }
}

/// The settings the AWS CLI reads from its environment variables and its two files, for one profile.
public struct S3Settings: Sendable {
    /// The credentials, when some were found.
    public var credentials: S3Credentials?
    /// The region: `AWS_REGION`, `AWS_DEFAULT_REGION` or the profile's `region`.
    public var region: String?
    /// The endpoint: `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL` or the profile's `endpoint_url`.
    public var endpointURL: String?
    /// The profile read: `AWS_PROFILE`, or `default`.
    public var profile: String
    /// The files looked in, for a message when nothing was found.
    public var searched: [String]

    /// Reads the settings as the AWS CLI does: environment variables first, then the shared credentials file
    /// (`AWS_SHARED_CREDENTIALS_FILE`, default `~/.aws/credentials`, section `[PROFILE]`), then the config
    /// file (`AWS_CONFIG_FILE`, default `~/.aws/config`, section `[profile PROFILE]`, or `[default]`).
    /// - Parameters:
    ///   - environment: The environment variables.
    ///   - profile: A profile named on the command line, over `AWS_PROFILE`.
    /// - Throws: ``PublishError`` with code `.credentials` for a named profile that neither file has.
    public static func load(environment: [String: String], profile named: String? = nil) throws -> S3Settings {
        let profile = named ?? environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        let home = environment["HOME"] ?? NSHomeDirectory()
        let credentialsFile = environment["AWS_SHARED_CREDENTIALS_FILE"] ?? "\(home)/.aws/credentials"
        let configFile = environment["AWS_CONFIG_FILE"] ?? "\(home)/.aws/config"
        let fromCredentials = iniSection(credentialsFile, profile)
        let fromConfig = iniSection(configFile, profile == "default" ? "default" : "profile \(profile)")
        if named != nil || environment["AWS_PROFILE"] != nil, fromCredentials == nil, fromConfig == nil {
            throw PublishError(
                code: .credentials,
                message: "no profile \"\(profile)\" in \(credentialsFile) or \(configFile)",
                fix: "add it there, or name another with --profile or AWS_PROFILE"
            )
        }
        var settings = S3Settings(profile: profile, searched: [credentialsFile, configFile])
        settings.credentials = credentials(
            environment,
            from: [
                (fromCredentials, "\(credentialsFile), profile \(profile)"),
                (fromConfig, "\(configFile), profile \(profile)"),
            ]
        )
        settings.region = [environment["AWS_REGION"], environment["AWS_DEFAULT_REGION"], fromConfig?["region"]]
            .lazy.compactMap { $0 }.first { !$0.isEmpty }
        settings.endpointURL = [
            environment["AWS_ENDPOINT_URL_S3"], environment["AWS_ENDPOINT_URL"], fromConfig?["endpoint_url"],
        ].lazy.compactMap { $0 }.first { !$0.isEmpty }
        return settings
    }

    private static func credentials(
        _ environment: [String: String],
        from sections: [([String: String]?, String)]
    ) -> S3Credentials? {
        if let id = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"], !id.isEmpty,
            !secret.isEmpty
        {
            let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            return S3Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: token, source: "environment")
        }
        for case (let section?, let source) in sections {
            guard let id = section["aws_access_key_id"], let secret = section["aws_secret_access_key"] else { continue }
            return S3Credentials(
                accessKeyID: id,
                secretAccessKey: secret,
                sessionToken: section["aws_session_token"],
                source: source
            )
        }
        return nil
    }

    /// The keys of section `[name]` of an INI file as the AWS CLI writes them (`key = value`, `#` and `;`
    /// comments), or `nil` when the file or the section is missing.
    static func iniSection(_ path: String, _ name: String) -> [String: String]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        var inSection = false
        var found: [String: String]?
        for raw in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                let section = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                inSection = section == name
                if inSection, found == nil { found = [:] }
                continue
            }
            guard inSection, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            found?[key] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        return found
    }
}
