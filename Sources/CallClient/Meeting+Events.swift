/// The meeting's events, as its one serial queue (`MeetingEventQueue`) delivers them: one stream of every
/// event, one sequence per topic, and the `@MainActor` listeners.
extension Meeting {
    /// Every event, in order, for one reader; finished after `meetingLeft` (or when `join()` fails). It
    /// keeps the newest `configuration.eventsBufferSize` (1,024) events for a reader that falls behind
    /// (or while nobody reads).
    public var events: AsyncStream<MeetingEvent> { eventQueue.stream }

    /// The dominant speaker (nil: nobody): the current one, once one was named, then every change.
    /// Each access is a new reader; any number of tasks may read, each keeping the newest 64 changes
    /// if it falls behind. Finished when the meeting ends.
    public var speakerChanges: AsyncStream<String?> { eventQueue.topics.speaker.subscribe() }

    /// The participant list: the latest change (after joining: the whole list, as `participants`),
    /// then every change. A new reader per access, as `speakerChanges`.
    public var participantChanges: AsyncStream<ParticipantListUpdate> { eventQueue.topics.participants.subscribe() }

    /// Every `error` event from the moment of the access on. A new reader per access, as `speakerChanges`.
    public var errors: AsyncStream<MeetingError> { eventQueue.topics.errors.subscribe() }

    /// Adds a listener, held weakly (the meeting never keeps it alive): it hears the events delivered
    /// after this call, on the main actor.
    public func addEventListener(_ listener: any MeetingEventListener) { eventQueue.add(listener) }

    /// Removes a listener; an event being delivered at that moment may still reach it.
    public func removeEventListener(_ listener: any MeetingEventListener) { eventQueue.remove(listener) }
}
