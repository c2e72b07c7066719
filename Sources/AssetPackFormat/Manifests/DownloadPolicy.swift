/// When the system downloads an asset pack, as in Apple's packaging manifest's `downloadPolicy`.
///
/// Encodes as Apple writes it: an object with exactly one key, `essential`, `prefetch` or `onDemand`.
public enum DownloadPolicy: Sendable, Hashable, Codable {
    /// Downloaded as part of installation; the app cannot launch until it is done.
    case essential(installationEventTypes: [InstallationEventType])
    /// Starts during installation and may finish in the background afterwards.
    case prefetch(installationEventTypes: [InstallationEventType])
    /// Downloaded only when the app asks for it.
    case onDemand

    /// The policy's key as it appears in manifests: `essential`, `prefetch` or `onDemand`.
    public var name: String {
        switch self {
        case .essential: "essential"
        case .prefetch: "prefetch"
        case .onDemand: "onDemand"
        }
    }

    /// The events on which the system downloads the pack by itself (empty for on-demand packs).
    public var installationEventTypes: [InstallationEventType] {
        switch self {
        case .essential(let types), .prefetch(let types): types
        case .onDemand: []
        }
    }

    private enum CodingKeys: String, CodingKey {
        case essential, prefetch, onDemand
    }

    private struct Events: Codable {
        var installationEventTypes: [InstallationEventType]
    }

    private struct Empty: Codable {}

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "downloadPolicy needs exactly one of essential, prefetch, onDemand"
                )
            )
        }
        switch key {
        case .essential:
            self = .essential(
                installationEventTypes: try container.decode(Events.self, forKey: key).installationEventTypes
            )
        case .prefetch:
            self = .prefetch(
                installationEventTypes: try container.decode(Events.self, forKey: key).installationEventTypes
            )
        case .onDemand:
            _ = try container.decode(Empty.self, forKey: key)
            self = .onDemand
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .essential(let types):
            try container.encode(Events(installationEventTypes: types), forKey: .essential)
        case .prefetch(let types):
            try container.encode(Events(installationEventTypes: types), forKey: .prefetch)
        case .onDemand:
            try container.encode(Empty(), forKey: .onDemand)
        }
    }
}

/// An event on which an essential or prefetch pack is downloaded.
public enum InstallationEventType: String, Sendable, Hashable, Codable, CaseIterable {
    /// A user newly installs the app.
    case firstInstallation
    /// A user updates the app to a new version.
    case subsequentUpdate
}
