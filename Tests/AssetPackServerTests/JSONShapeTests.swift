import AssetPackFormat
import Foundation
import SystemPackage
import Testing

@testable import AssetPackServer

/// The server's JSON shapes (control API, dashboard events, errors, request log) as the README's "JSON
/// output" section documents them, byte for byte: a key renamed, dropped, or turned from `null` into absent
/// fails here before a script or the dashboard's page meets it.
@Suite("Server JSON shapes")
struct ServerJSONShapeTests {
    let problem = ManifestProblem(
        file: "Levels.json",
        key: "downloadPolicy",
        severity: .error,
        message: "is missing",
        fix: nil
    )

    func text(_ value: some Encodable) throws -> String { try JSONOutput.line(value) }

    @Test func controlAnswers() throws {
        #expect(try text(ControlAnswer.Faults(faults: ["latency=1"], seed: 7)) == #"{"faults":["latency=1"],"seed":7}"#)
        #expect(try text(ControlAnswer.Faults(faults: [])) == #"{"faults":[]}"#)
        #expect(
            try text(ControlAnswer.FaultAdded(added: "status=503", faults: ["status=503"]))
                == #"{"added":"status=503","faults":["status=503"]}"#
        )
        #expect(try text(ControlAnswer.FaultRemoved(removed: "a", faults: [])) == #"{"faults":[],"removed":"a"}"#)
        #expect(
            try text(ControlAnswer.Version(id: "L", version: nil, pinned: false))
                == #"{"id":"L","pinned":false,"version":null}"#
        )
        #expect(
            try text(ControlAnswer.Version(id: "L", version: 3, pinned: true))
                == #"{"id":"L","pinned":true,"version":3}"#
        )
        #expect(try text(ControlAnswer.Obsolete(id: "L", obsolete: true)) == #"{"id":"L","obsolete":true}"#)
        let state = PackCatalog.PackState(
            id: "L",
            contentVersion: 2,
            publishedVersion: 1,
            pinnedBy: nil,
            obsolete: false,
            removed: false,
            problems: [problem]
        )
        #expect(
            try text(ControlAnswer.Packs(packs: [.init(state)], problems: []))
                == #"{"packs":[{"contentVersion":2,"id":"L","obsolete":false,"pinnedBy":null,"problems":[{"file":"Levels.json","fix":null,"key":"downloadPolicy","message":"is missing","pack":null,"severity":"error"}],"publishedVersion":1,"removed":false}],"problems":[]}"#
        )
    }

    @Test func dashboardSnapshotKeepsNullsAndAddsTheServedKeysOnlyWhenServed() throws {
        let building = DashboardEvent.Pack(
            id: "B",
            build: "building",
            building: true,
            problems: [],
            obsolete: false,
            removed: false,
            pinnedBy: nil,
            contentVersion: nil,
            publishedVersion: nil,
            served: nil
        )
        #expect(
            try text(building)
                == #"{"build":"building","building":true,"contentVersion":null,"id":"B","obsolete":false,"pinnedBy":null,"problems":[],"publishedVersion":null,"removed":false}"#
        )
        var served = DashboardEvent.Pack(
            id: "T",
            build: "published",
            building: false,
            problems: [],
            obsolete: false,
            removed: false,
            pinnedBy: "control",
            contentVersion: 1,
            publishedVersion: 1,
            served: nil
        )
        served.served = DashboardEvent.Served(
            ServedPack(
                id: "T",
                version: 1,
                downloadPolicy: .onDemand,
                archive: "/a",
                sha256: "ab",
                downloadSize: 10,
                installSize: 20,
                fileCount: 2,
                compression: .zstd,
                lastModified: Date(timeIntervalSince1970: 0)
            )
        )
        #expect(
            try text(served)
                == #"{"build":"published","building":false,"compression":"zstd","contentVersion":1,"deltas":[],"files":2,"format":"tar","id":"T","installSize":20,"language":null,"obsolete":false,"pinnedBy":"control","platforms":null,"policy":"onDemand","problems":[],"publishedVersion":1,"removed":false,"sha256":"ab","size":10,"version":1}"#
        )
        #expect(
            try text(
                DashboardEvent.Snapshot(packs: [], problems: [], faults: ["latency=1"], seed: "18446744073709551615")
            )
                == #"{"faults":["latency=1"],"packs":[],"problems":[],"seed":"18446744073709551615"}"#
        )
    }

    @Test func dashboardDownloadsSayRateOnlyOnceKnownAndFinishedRowsTheirOutcome() throws {
        let request = DownloadBoard.InFlight(
            id: 4,
            client: "127.0.0.1",
            method: "GET",
            path: "/assets/T",
            pack: "T",
            range: nil,
            status: 200,
            total: 10,
            fault: nil,
            sent: 5,
            started: Date(timeIntervalSince1970: 1.5)
        )
        var row = DashboardEvent.Response(request)
        #expect(
            try text(row)
                == #"{"client":"127.0.0.1","fault":null,"id":4,"method":"GET","pack":"T","path":"/assets/T","range":null,"sent":5,"started":1.5,"status":200,"total":10}"#
        )
        row.rate = 2.5
        #expect(try text(row).contains(#""rate":2.5"#))
        let finished = DashboardEvent.Response(
            DownloadBoard.Finished(sequence: 9, request: request, milliseconds: 12.345, aborted: true)
        )
        #expect(try text(finished).hasSuffix(#""sent":5,"sequence":9,"started":1.5,"status":200,"total":10}"#))
        #expect(try text(finished).contains(#""aborted":true,"client""#) && text(finished).contains(#""ms":12.3"#))
        #expect(
            try text(DashboardEvent.Downloads(inFlight: [], inFlightCount: 0, finished: [], skipped: 2, capacity: 500))
                == #"{"capacity":500,"finished":[],"inFlight":[],"inFlightCount":0,"skipped":2}"#
        )
    }

    @Test func errorsAndRequestLogLines() throws {
        #expect(
            try text(ErrorAnswer(error: .init(code: "notFound", message: "nothing at /x")))
                == #"{"error":{"code":"notFound","message":"nothing at /x"}}"#
        )
        let line = RequestLogLine(
            time: "2026-11-26T00:00:00Z",
            method: "GET",
            path: "/assets/Über",
            range: nil,
            status: 200,
            bytes: 3,
            ms: 0.5,
            fault: nil,
            aborted: nil
        )
        #expect(
            try text(line)
                == #"{"bytes":3,"method":"GET","ms":0.5,"path":"/assets/Über","status":200,"time":"2026-11-26T00:00:00Z"}"#
        )
    }

    @Test func aValueJSONCannotHoldIsAnErrorNamingItsKeyNotAnEmptyBody() throws {
        var row = DashboardEvent.Response(
            DownloadBoard.InFlight(
                id: 1,
                client: "c",
                method: "GET",
                path: "/",
                pack: nil,
                range: nil,
                status: 200,
                total: nil,
                fault: nil,
                sent: 0,
                started: Date()
            )
        )
        row.rate = .infinity
        let error = #expect(throws: EncodingError.self) { try JSONOutput.data(row) }
        #expect("\(String(describing: error))".contains("rate"))
    }
}
