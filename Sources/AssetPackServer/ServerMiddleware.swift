import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

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
        let payload = ["error": ["code": code, "message": message]]
        let data =
            (try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data()
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Writes one line per request once its body has been sent (or has failed): method, path, range, status,
/// bytes actually sent, milliseconds. Plain text, or JSON lines with `--json-log`.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let json: Bool
    let write: @Sendable (String) -> Void

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let start = ContinuousClock.now
        var response = try await next(request, context)
        let line = LineParts(
            method: request.method.rawValue,
            path: request.uri.path,
            range: request.headers[.range],
            status: response.status.code,
            fault: response.headers[.mockFault]
        )
        if request.method == .head {
            // The router answers HEAD from the GET handler and drops its body: log now, no body will follow.
            write(line.render(bytes: 0, elapsed: .now - start, json: json, aborted: nil))
            return response
        }
        let counter = ByteCounter()
        let original = response.body
        let json = self.json
        let write = self.write
        response.body = ResponseBody(contentLength: original.contentLength) { writer in
            do {
                try await original.write(
                    writer.map { buffer in
                        counter.add(Sendfile.length(of: buffer))  // a sendfile marker counts its region
                        return buffer
                    }
                )
                write(line.render(bytes: counter.value, elapsed: .now - start, json: json, aborted: nil))
            } catch {
                write(line.render(bytes: counter.value, elapsed: .now - start, json: json, aborted: "\(error)"))
                throw error
            }
        }
        return response
    }

    private struct LineParts: Sendable {
        var method: String
        var path: String
        var range: String?
        var status: Int
        var fault: String?

        func render(bytes: Int, elapsed: Duration, json: Bool, aborted: String?) -> String {
            let milliseconds =
                Double(elapsed.components.seconds) * 1000
                + Double(elapsed.components.attoseconds) / 1e15
            let ms = (milliseconds * 10).rounded() / 10
            if json {
                var object: [String: Any] = [
                    "time": ISO8601DateFormatter().string(from: Date()),
                    "method": method, "path": path, "status": status, "bytes": bytes, "ms": ms,
                ]
                if let range { object["range"] = range }
                if let fault { object["fault"] = fault }
                if let aborted { object["aborted"] = aborted }
                let data =
                    (try? JSONSerialization.data(
                        withJSONObject: object,
                        options: [.sortedKeys, .withoutEscapingSlashes]
                    )) ?? Data()
                return String(decoding: data, as: UTF8.self)
            }
            var text = "\(method) \(path) \(range ?? "-") \(status) \(bytes)B \(ms)ms"
            if let fault { text += " fault=\(fault)" }
            if let aborted { text += " aborted: \(aborted)" }
            return text
        }
    }
}

/// Counts body bytes across the tasks that write them.
final class ByteCounter: Sendable {
    private let total = Atomic<Int>(0)

    func add(_ count: Int) { total.add(count, ordering: .relaxed) }

    var value: Int { total.load(ordering: .relaxed) }
}
