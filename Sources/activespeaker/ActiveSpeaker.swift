@main
struct ActiveSpeaker {
    static func main() {
        print("activespeaker: under construction")
    }
}
