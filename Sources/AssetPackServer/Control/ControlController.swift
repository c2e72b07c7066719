import AssetPackFormat
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The request context of `ba-mock`: Hummingbird's core storage plus the peer's address, which the
/// control endpoint checks.
public struct MockRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connected peer.
    public let remoteAddress: SocketAddress?
    /// The connection, to find the files its `sendfile` bodies have open.
    let channel: ObjectIdentifier
    /// The connection, for bodies that wait until it takes bytes.
    let connection: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.channel = ObjectIdentifier(source.channel)
        self.connection = source.channel
    }
}

/// `/_mock/...`: change faults, versions and obsolete packs while serving, from this machine only.
///
/// ```
/// GET    /_mock/faults                       the rules in force and the seed
/// POST   /_mock/faults        (body: a rule) add a rule, e.g. reset-after=65536,pack=Levels
/// DELETE /_mock/faults                       remove every rule
/// DELETE /_mock/faults/<n>                   remove the rule at index n of the list (0 first)
/// GET    /_mock/packs                        every pack: content and published version, pins, obsolete marks
/// PUT    /_mock/packs/<id>/version/<n>       publish pack <id> at version <n> (1 or more)
/// DELETE /_mock/packs/<id>/version           remove that pin
/// PUT    /_mock/packs/<id>/obsolete          stop publishing it (clients see it as obsolete)
/// DELETE /_mock/packs/<id>/obsolete          publish it again
/// ```
///
/// A rule's body is read up to 4 KiB and within `bodyTimeout`: a client that sends it a byte now and then gets
/// 408 and its connection closed, rather than holding both for as long as it likes.
struct ControlController {
    let catalog: PackCatalog
    let faults: FaultPlan
    let bodyTimeout: TimeAmount
    /// The token every `/_mock/` request must carry, or `nil` (listening on loopback only).
    var token: String? = nil
    /// The dashboard's routes, served in the same group (same loopback and token rules).
    var dashboard: DashboardController? = nil

    func addRoutes(to router: Router<MockRequestContext>) {
        let group = router.group("_mock").add(middleware: LoopbackOnlyMiddleware())
        group.add(middleware: SameSiteMiddleware(anyHost: token != nil))
        if let token { group.add(middleware: TokenMiddleware(token: token)) }
        dashboard?.addRoutes(to: group)
        group.get("faults", use: listFaults)
        group.post("faults", use: addFault)
        group.delete("faults", use: clearFaults)
        group.delete("faults/{index}", use: removeFault)
        group.get("packs", use: listPacks)
        group.put("packs/{id}/version/{version}", use: setVersion)
        group.delete("packs/{id}/version", use: clearVersion)
        group.put("packs/{id}/obsolete") { _, context in try await setObsolete(context, true) }
        group.delete("packs/{id}/obsolete") { _, context in try await setObsolete(context, false) }
    }

    @Sendable func listFaults(_ request: Request, context: MockRequestContext) async throws -> Response {
        try json(ControlAnswer.Faults(faults: faults.rules.map(\.description), seed: faults.seed))
    }

    @Sendable func addFault(_ request: Request, context: MockRequestContext) async throws -> Response {
        guard let body = try await Self.collect(request.body, upTo: 4096, within: bodyTimeout) else {
            let seconds = Double(bodyTimeout.nanoseconds) / 1e9
            return JSONErrorMiddleware<MockRequestContext>.response(
                .requestTimeout,
                code: "requestTimeout",
                message: "the request body did not arrive within \(seconds) s; the connection is closed. "
                    + "Fix: send the rule in one go, e.g. curl -X POST -d 'reset-after=65536' .../_mock/faults",
                headers: [.connection: "close"]
            )
        }
        let rule = try FaultRule(parsing: String(buffer: body).trimmingCharacters(in: .whitespacesAndNewlines))
        if let pack = rule.pack, case let known = await catalog.knownPackIDs, !known.contains(pack) {
            throw AssetPackServerError(
                code: .invalidOption,
                message: "fault \"\(rule)\": \(NamedPacks.unknown(pack, known: known))"
            )
        }
        faults.add(rule)
        return try json(
            ControlAnswer.FaultAdded(added: rule.description, faults: faults.rules.map(\.description)),
            status: .created
        )
    }

    /// The whole body, or `nil` when it did not arrive within `timeout`.
    /// - Throws: `NIOTooManyBytesError` past `limit`; what reading the body throws.
    static func collect(_ body: RequestBody, upTo limit: Int, within timeout: TimeAmount) async throws -> ByteBuffer? {
        try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: limit) }
            group.addTask {
                try await Task.sleep(for: .nanoseconds(timeout.nanoseconds))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    @Sendable func clearFaults(_ request: Request, context: MockRequestContext) async throws -> Response {
        faults.clear()
        return try json(ControlAnswer.Faults(faults: []))
    }

    @Sendable func removeFault(_ request: Request, context: MockRequestContext) async throws -> Response {
        let rules = faults.rules
        guard let index = context.parameters.get("index").flatMap(Int.init), let removed = faults.remove(at: index)
        else {
            throw AssetPackServerError(
                code: .invalidOption,
                message: "there is no fault rule at \(context.parameters.get("index") ?? ""): "
                    + "give an index from 0 to \(rules.count - 1) of GET /_mock/faults (\(rules.count) rule(s))"
            )
        }
        return try json(
            ControlAnswer.FaultRemoved(removed: removed.description, faults: faults.rules.map(\.description))
        )
    }

    @Sendable func setVersion(_ request: Request, context: MockRequestContext) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        guard let version = context.parameters.get("version").flatMap(Int.init), version >= 1 else {
            throw AssetPackServerError(
                code: .invalidOption,
                message: "the version must be a whole number of 1 or more, e.g. /version/7"
            )
        }
        try await catalog.setVersion(version, forPackWithID: id)
        return try json(ControlAnswer.Version(id: id, version: version, pinned: true))
    }

    @Sendable func clearVersion(_ request: Request, context: MockRequestContext) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        try await catalog.clearVersion(forPackWithID: id)
        let published = await catalog.packStates.first { $0.id == id }?.publishedVersion
        return try json(ControlAnswer.Version(id: id, version: published, pinned: false))
    }

    @Sendable func listPacks(_ request: Request, context: MockRequestContext) async throws -> Response {
        let packs = await catalog.packStates.map(ControlAnswer.Pack.init)
        return try json(ControlAnswer.Packs(packs: packs, problems: catalog.snapshot.problems))
    }

    private func setObsolete(_ context: MockRequestContext, _ obsolete: Bool) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        try await catalog.setObsolete(obsolete, packWithID: id)
        return try json(ControlAnswer.Obsolete(id: id, obsolete: obsolete))
    }

    /// `answer` as a JSON response.
    /// - Throws: `EncodingError` when it cannot be written (the request then fails with a 500 that says so).
    private func json(_ answer: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try JSONOutput.data(answer)
        return Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}

/// Refuses the control endpoint to any peer outside the loopback range (127.0.0.0/8, ::1).
struct LoopbackOnlyMiddleware: RouterMiddleware {
    func handle(
        _ request: Request,
        context: MockRequestContext,
        next: (Request, MockRequestContext) async throws -> Response
    ) async throws -> Response {
        guard Self.isLoopback(context.remoteAddress) else {
            return JSONErrorMiddleware<MockRequestContext>.response(
                .forbidden,
                code: "forbidden",
                message: "the control endpoint answers requests from this machine (loopback) only"
            )
        }
        return try await next(request, context)
    }

    static func isLoopback(_ address: SocketAddress?) -> Bool {
        guard let ip = address?.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }
}

/// A page of any site open in a browser on this machine can send requests to 127.0.0.1: a form's POST, or a
/// `fetch` from a name that resolves to 127.0.0.1 (DNS rebinding). `/_mock/` refuses a request a browser says
/// came from another origin (`Origin`, `Sec-Fetch-Site`) and, on loopback, one whose `Host` is not this
/// machine. `curl` and scripts send neither header, and the dashboard's page is of the same origin.
struct SameSiteMiddleware: RouterMiddleware {
    /// Whether any `Host` is accepted (listening beyond loopback, where the token guards the API instead).
    let anyHost: Bool

    func handle(
        _ request: Request,
        context: MockRequestContext,
        next: (Request, MockRequestContext) async throws -> Response
    ) async throws -> Response {
        let host = request.head.authority ?? ""
        let site = Self.secFetchSite.flatMap { request.headers[$0] }.map { $0.lowercased() }
        let origin = Self.origin.flatMap { request.headers[$0] }
        let crossSite = site.map { $0 != "same-origin" && $0 != "none" } ?? false
        let otherOrigin = origin.map { Self.authority(ofOrigin: $0)?.lowercased() != host.lowercased() } ?? false
        guard !crossSite, !otherOrigin, anyHost || Self.isLoopbackName(host) else {
            return JSONErrorMiddleware<MockRequestContext>.response(
                .forbidden,
                code: "crossSite",
                message:
                    "refused a request to /_mock/ from a web page of another site; a page may not steer ba-mock. Fix: "
                    + "use the dashboard at the URL ba-mock printed, or a tool such as curl"
            )
        }
        return try await next(request, context)
    }

    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")
    static let origin = HTTPField.Name("Origin")

    /// `http://host:port` → `host:port`; `nil` for `null` or anything without a scheme.
    static func authority(ofOrigin origin: String) -> String? {
        guard let scheme = origin.range(of: "://") else { return nil }
        let rest = origin[scheme.upperBound...]
        return rest.isEmpty || rest.contains("/") ? nil : String(rest)
    }

    /// Whether a `Host` names this machine: `localhost`, an address in 127.0.0.0/8, or `[::1]`, with or
    /// without a port.
    static func isLoopbackName(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("[") {
            name = String(name.dropFirst().prefix { $0 != "]" })
        } else if let colon = name.lastIndex(of: ":") {
            name = String(name[..<colon])
        }
        if name == "localhost" || name == "::1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}

/// With `--host` off loopback, every `/_mock/` request carries the token printed at start: `?token=` (what a
/// browser's address bar and `EventSource` can send) or an `X-BA-Mock-Token` header (what the page's script
/// and `curl -H` send). A peer the server sees as loopback may still be a remote one forwarded by a tunnel or a
/// proxy on this machine; and a page of any site open in a browser here can send requests to it.
struct TokenMiddleware: RouterMiddleware {
    let token: String

    func handle(
        _ request: Request,
        context: MockRequestContext,
        next: (Request, MockRequestContext) async throws -> Response
    ) async throws -> Response {
        let given = request.headers[Self.header] ?? request.uri.queryParameters.get("token") ?? ""
        guard Self.same(Array(given.utf8), Array(token.utf8)) else {
            return JSONErrorMiddleware<MockRequestContext>.response(
                .unauthorized,
                code: "unauthorized",
                message: "ba-mock listens beyond this machine, so /_mock/ needs the token it printed at start: "
                    + "open the dashboard URL it printed (…/_mock/?token=…), or send X-BA-Mock-Token: TOKEN"
            )
        }
        return try await next(request, context)
    }

    static var header: HTTPField.Name { HTTPField.Name("X-BA-Mock-Token") ?? .authorization }

    /// Compares in time that depends on the lengths only, not on where the first difference is.
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// A new random token: 128 bits, hex.
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}
