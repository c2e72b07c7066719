import AssetPackFormat
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Turns every error into a JSON body `{"error": {"code": …, "message": …}}` with the right status, so
/// that clients and scripts never have to parse HTML or plain text.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as AssetPackServerError {
            var headers: HTTPFields = [:]
            if let contentRange = error.contentRange { headers[.contentRange] = contentRange }
            if error.code == .packBuilding { headers[.retryAfter] = "1" }
            return Self.response(error.status, code: error.code.rawValue, message: error.message, headers: headers)
        } catch is NIOTooManyBytesError {
            return Self.response(
                .contentTooLarge,
                code: "tooLarge",
                message: "the request body is larger than this endpoint takes (a fault rule is one short line)"
            )
        } catch let error as HTTPError where error.status == .notFound {
            return Self.response(
                .notFound,
                code: AssetPackServerError.Code.routeNotFound.rawValue,
                message: "nothing at \(request.uri.path). This server answers GET /manifest and GET /assets/<id>"
            )
        } catch let error as HTTPError {
            return Self.response(error.status, code: "http", message: error.body ?? error.status.reasonPhrase)
        } catch {
            context.logger.error("request failed: \(error)")
            return Self.response(.internalServerError, code: "internal", message: "\(error)")
        }
    }

    static func response(
        _ status: HTTPResponse.Status,
        code: String,
        message: String,
        headers: HTTPFields = [:]
    ) -> Response {
        let data: Data
        do {
            data = try JSONOutput.data(ErrorAnswer(error: .init(code: code, message: message)))
        } catch {
            // Two strings always encode; this keeps the body a JSON error should that ever change.
            data = Data(#"{"error":{"code":"internal","message":"the error could not be encoded"}}"#.utf8)
        }
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Writes one line per request once its response is over: method, path, range, status, the body bytes the
/// client's socket took, milliseconds, and `aborted` when the response was cut short (a write failed, or the
/// connection closed before its end). Plain text, or JSON lines with `--json-log`.
///
/// The bytes are counted by ``ResponseTallyHandler`` as writes complete, in the pieces the body is written in
/// (256 KiB from memory or from disk, 1 MiB `sendfile` regions, 16 KiB with faults), so an aborted
/// line says at most one piece less than the socket took, and never more.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = MockRequestContext

    let json: Bool
    let tally: ResponseTally
    /// Where lines go, or `nil` when only the dashboard's board is kept.
    let write: (@Sendable (String) -> Void)?
    /// The dashboard's responses in flight and request log, or `nil` without a dashboard.
    var board: DownloadBoard? = nil

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard records(request.uri.path) else { return try await next(request, context) }
        let start = ContinuousClock.now
        let response = try await next(request, context)
        expect(
            LineParts(
                method: request.method.rawValue,
                path: request.uri.path,
                range: request.headers[.range],
                status: response.status.code,
                fault: response.headers[.mockFault]
            ),
            total: response.headers[.contentLength].flatMap { Int($0) } ?? response.body.contentLength,
            client: context.remoteAddress?.ipAddress,
            since: start,
            on: context.channel
        )
        return response
    }

    /// Whether a response to a request for `path` is recorded now: always with a request log; on the board
    /// while a dashboard page is open (a page shows the responses from when it opened). The dashboard's own
    /// requests (its event stream lasts as long as the page) are not downloads, and not on the board.
    func records(_ path: String) -> Bool {
        path.hasPrefix("/_mock") ? write != nil : recordsDownloads
    }

    /// Whether a response outside `/_mock` (a download) is recorded now.
    var recordsDownloads: Bool { write != nil || board?.isWatched == true }

    /// Queues the account of a response about to be handed to the connection `channel` by the router: its
    /// line is written and its row on the board finished when its last write completes
    /// (``ResponseTallyHandler`` counts it).
    func expect(
        _ line: LineParts,
        total: Int?,
        client: String?,
        since start: ContinuousClock.Instant,
        on channel: ObjectIdentifier
    ) {
        tally.expect(entry(line, total: total, client: client, since: start), on: channel)
    }

    /// The account of a response: on the board from now (when there is one), its line written once the entry
    /// is settled, on the connection's event loop when the response's last write completes (the line must
    /// not block: a command hands it to a queue). ``DirectPackResponder`` settles its own.
    func entry(
        _ line: LineParts,
        total: Int?,
        client: String?,
        pack: String? = nil,
        since start: ContinuousClock.Instant
    ) -> ResponseTally.Entry {
        let board = line.path.hasPrefix("/_mock") || self.board?.isWatched != true ? nil : self.board
        let (json, write) = (self.json, self.write)
        let boardID = board?.reserveID()
        let entry = ResponseTally.Entry { bytes, aborted in
            write?(line.render(bytes: bytes, elapsed: .now - start, json: json, aborted: aborted))
            if let board, let boardID { board.finish(boardID, bytes: bytes, aborted: aborted) }
        }
        if let board, let boardID {
            board.begin(
                DownloadBoard.InFlight(
                    id: boardID,
                    client: client ?? "?",
                    method: line.method,
                    path: line.path,
                    pack: pack ?? DownloadBoard.pack(inPath: line.path),
                    range: line.range,
                    status: line.status,
                    total: total,
                    fault: line.fault,
                    sent: 0,
                    started: Date()
                ),
                entry: entry
            )
        }
        return entry
    }

    /// What a request log line says of its request and response, but for the bytes sent and the time taken.
    struct LineParts: Sendable {
        var method: String
        var path: String
        var range: String?
        var status: Int
        var fault: String?

        func render(bytes: Int, elapsed: Duration, json: Bool, aborted: Bool) -> String {
            let ms = (elapsed.inSeconds * 10_000).rounded() / 10  // milliseconds, one decimal
            if json {
                let line = RequestLogLine(
                    time: ISO8601DateFormatter().string(from: Date()),
                    method: method,
                    path: path,
                    range: range,
                    status: status,
                    bytes: bytes,
                    ms: ms,
                    fault: fault,
                    aborted: aborted ? true : nil
                )
                // Strings, whole numbers and a finite `ms` always encode; were one not to, the line says so.
                do { return try JSONOutput.line(line) } catch { return "request log line not encodable: \(error)" }
            }
            var text = "\(method) \(path) \(range ?? "-") \(status) \(bytes)B \(ms)ms"
            if let fault { text += " fault=\(fault)" }
            if aborted { text += " aborted" }
            return text
        }
    }
}

/// An error answer of the server, any route: `{"error": {"code": CODE, "message": MESSAGE}}`.
struct ErrorAnswer: Encodable, Equatable {
    struct Body: Encodable, Equatable {
        var code: String
        var message: String
    }
    var error: Body
}

/// One line of `--json-log`: `range`, `fault` and `aborted` only when they apply.
struct RequestLogLine: Encodable, Equatable {
    var time: String
    var method: String
    var path: String
    var range: String?
    var status: Int
    var bytes: Int
    var ms: Double
    var fault: String?
    var aborted: Bool?
}
