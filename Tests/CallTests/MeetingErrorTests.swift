import CallClient
import CallProtocol
import Testing

/// `MeetingError.Code`: the numbers of docs/call.md's error tables, typed.
@Suite struct MeetingErrorTests {
    @Test(arguments: [
        (MeetingError.Code.network, 3001), (.audioDeviceFailed, 3002), (.invalidArgument, 3003),
        (.noWebcamFound, 3010), (.noMicrophoneFound, 3059), (.actionNotSupported, 3068),
    ])
    func theSDKsOwnCodesHaveTheirDocumentedNumbers(code: MeetingError.Code, number: Int) {
        #expect(code.rawValue == number)
        #expect(MeetingError.Code(rawValue: number) == code)
        #expect("\(code)" == "\(number)")
    }

    @Test func theServersCodesKeepTheirNumbers() {
        for code in CallErrorCode.allCases {
            #expect(MeetingError.Code.server(code).rawValue == code.rawValue)
            #expect(MeetingError.Code(rawValue: code.rawValue) == .server(code))
        }
        #expect(MeetingError.Code(rawValue: 3004) == nil)
        #expect(MeetingError.Code(rawValue: 0) == nil)
    }

    @Test func joinFailureReadsTheTypedCode() {
        #expect(MeetingError(code: .server(.invalidToken), "").joinFailure == .invalidToken)
        #expect(MeetingError(code: .server(.wrongRoom), "").joinFailure == .invalidToken)
        #expect(MeetingError(code: .server(.tokenExpired), "").joinFailure == .tokenExpired)
        #expect(MeetingError(code: .server(.roomNotFound), "").joinFailure == .roomNotFound)
        #expect(MeetingError(code: .server(.roomFull), "").joinFailure == .roomFull)
        #expect(MeetingError(code: .network, "").joinFailure == .network)
        #expect(MeetingError(code: .server(.serverError), "").joinFailure == .other)
        #expect(MeetingError(code: .invalidArgument, "").joinFailure == .other)
        #expect(MeetingError(code: .noMicrophoneFound, "no microphone device found").description == "no microphone device found (3059)")
    }
}
