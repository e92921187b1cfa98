#include "training/data/stories.h"

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "training/data/shuffle.h"

namespace trainscope::training {
namespace {

using Words = std::span<const std::string_view>;

struct Person {
  std::string_view name;
  bool she;
};

constexpr std::array<Person, 24> kNames{{
    {"Lily", true},  {"Tom", false},  {"Mia", true},   {"Ben", false}, {"Sue", true},
    {"Max", false},  {"Anna", true},  {"Tim", false},  {"Lucy", true}, {"Sam", false},
    {"Zoe", true},   {"Jack", false}, {"Emma", true},  {"Leo", false}, {"Ella", true},
    {"Finn", false}, {"Rosa", true},  {"Noah", false}, {"Kim", true},  {"Ollie", false},
    {"Amy", true},   {"Joe", false},  {"Daisy", true}, {"Bob", false},
}};
constexpr std::array<std::string_view, 10> kAnimalKinds{
    "small dog",  "fluffy cat",  "brave bunny", "tiny bird",    "big bear",
    "happy frog", "curious fox", "gentle duck", "little mouse", "kind owl"};
constexpr std::array<std::string_view, 12> kPlaces{"park", "garden",   "forest",     "beach",
                                                   "farm", "big hill", "small town", "backyard",
                                                   "lake", "school",   "playground", "market"};
constexpr std::array<std::string_view, 14> kObjects{
    "red ball",     "shiny stone",  "blue kite",     "toy car",   "big box",
    "soft blanket", "little boat",  "yellow flower", "old key",   "new hat",
    "drum",         "picture book", "green truck",   "teddy bear"};
constexpr std::array<std::string_view, 8> kAdjectives{"happy", "kind", "curious", "playful",
                                                      "funny", "shy",  "clever",  "friendly"};
constexpr std::array<std::string_view, 8> kActivities{
    "play with the ball", "run and jump",    "sing songs", "draw pictures",
    "look at the clouds", "dig in the sand", "read books", "climb trees"};
constexpr std::array<std::string_view, 6> kIndoor{"build a tower of blocks", "bake cookies",
                                                  "paint a picture",         "read a story",
                                                  "make a blanket fort",     "play a game"};
constexpr std::array<std::string_view, 8> kSpots{"bed",  "big tree", "table", "bench",
                                                 "bush", "rock",     "door",  "slide"};
constexpr std::array<std::string_view, 4> kSad{"sad", "worried", "upset", "unhappy"};
constexpr std::array<std::string_view, 6> kGlad{"happy",   "glad",     "proud",
                                                "excited", "thankful", "joyful"};
constexpr std::array<std::string_view, 6> kFears{"dark",         "big slide",   "deep water",
                                                 "loud thunder", "tall ladder", "barking dog"};
constexpr std::array<std::string_view, 6> kTraps{
    "in a bush", "under a log", "in the mud", "behind a fence", "in a hole", "on a high branch"};
constexpr std::array<std::string_view, 5> kBuilds{"sand castle", "tree house", "snowman",
                                                  "paper boat", "bird house"};
constexpr std::array<std::string_view, 5> kStuff{
    "sticks and leaves", "sand and water", "boxes and tape", "paper and glue", "stones and mud"};
constexpr std::array<std::string_view, 4> kWeather{"rain", "snow", "wind", "storm"};
constexpr std::array<std::string_view, 4> kRelatives{"Mom", "Dad", "Grandma", "Grandpa"};

// A plot is a list of steps; each step is told with one of its variants.
// Placeholders: {hero} {He} {he} {his} {him} {friend} {fHe} {fhe} {kind}
// {fkind} {adj} {place} {obj} {activity} {indoor} {spot} {spot2} {sad} {glad}
// {fear} {trap} {animal} {build} {stuff} {weather} {rel}.
using Step = std::vector<std::string_view>;
using Plot = std::vector<Step>;

const std::vector<Step>& openings() {
  static const std::vector<Step> steps = {
      {"Once upon a time, there was a {adj} {kind} named {hero}. ",
       "One day, a {kind} named {hero} went to the {place}. ",
       "{hero} was a {adj} {kind} who loved to {activity}. ",
       "There once was a {kind} called {hero}. {He} lived near the {place}. "},
      {"{He} had a friend named {friend}, a {fkind}. ", "{His} best friend was {friend}. ",
       "Every day, {he} played with {his} friend {friend}. "},
  };
  return steps;
}

const std::vector<Plot>& plots() {
  static const std::vector<Plot> all = {
      // A lost object.
      {{"{hero} had a {obj}. {He} loved it very much. ",
        "{hero} got a {obj} from {rel}. It was {his} favorite thing. "},
       {"One day, {he} took the {obj} to the {place}. ",
        "{He} and {friend} went to the {place} to play with the {obj}. "},
       {"But then the {obj} was gone! {hero} felt {sad}. ",
        "When it was time to go home, {hero} could not find the {obj}. {He} was very {sad}. "},
       {"\"Where is my {obj}?\" {he} asked. ", "\"Oh no, I lost my {obj}!\" {he} cried. "},
       {"{friend} said, \"Don't worry, I will help you look.\" ",
        "\"Let's look for it together,\" said {friend}. "},
       {"They looked under the {spot} and behind the {spot2}. ",
        "They looked everywhere, near the {spot} and under the {spot2}. "},
       {"At last, {friend} found the {obj} next to the {spot}. ",
        "Then {hero} saw something shiny. It was the {obj}! "},
       {"{hero} was so {glad}. \"Thank you, {friend}!\" {he} said. ",
        "{hero} hugged {friend}. \"You are a good friend,\" {he} said. "}},
      // Sharing.
      {{"{hero} and {friend} were playing at the {place}. ",
        "One sunny day, {hero} and {friend} went to the {place}. "},
       {"{friend} had a {obj}. {hero} wanted to play with it too. ",
        "{friend} brought a {obj}. It looked like so much fun. "},
       {"\"Can I play with your {obj}?\" asked {hero}. ",
        "\"Please, can I have a turn?\" {hero} asked. "},
       {"\"No, it is mine!\" said {friend}. {hero} felt {sad}. ",
        "At first, {friend} did not want to share. {hero} was {sad}. "},
       {"Then {friend} saw that {hero} was {sad}. {fHe} felt bad. ",
        "{friend} thought about it for a moment. "},
       {"\"Here, we can play together,\" {fhe} said. ",
        "\"I am sorry. Let's share the {obj},\" said {friend}. "},
       {"They played with the {obj} all day and had lots of fun. ",
        "They took turns, and playing together was even more fun. "},
       {"From that day on, {hero} and {friend} always shared their toys. ",
        "They learned that sharing makes everyone {glad}. "}},
      // Helping an animal.
      {{"{hero} was walking in the {place} when {he} heard a small sound. ",
        "One morning, {hero} went to the {place} to {activity}. "},
       {"{He} saw a little {animal} stuck {trap}. ",
        "There was a {animal} stuck {trap}. It could not get out. "},
       {"The {animal} was very {sad}. ", "The poor {animal} looked at {hero} with big eyes. "},
       {"\"Don't be afraid, I will help you,\" said {hero}. ",
        "{hero} wanted to help. \"I am here,\" {he} said softly. "},
       {"{He} pulled very gently, and the {animal} was free! ",
        "{He} moved the sticks one by one, and soon the {animal} could get out. "},
       {"\"Thank you,\" said the {animal}. \"You are very kind.\" ",
        "The {animal} jumped up and down. It was so {glad}. "},
       {"After that, {hero} and the {animal} became best friends. ",
        "{hero} felt {glad} because {he} had helped someone in need. "}},
      // A rainy day.
      {{"{hero} wanted to go to the {place} to {activity}. ",
        "{hero} and {friend} had a plan to {activity} at the {place}. "},
       {"But then the {weather} came. {hero} had to stay inside. ",
        "But when {he} looked out of the window, {he} saw the {weather}. "},
       {"{He} felt {sad}. \"Now we cannot go out,\" {he} said. ",
        "\"This is not fair,\" said {hero}. {He} was very {sad}. "},
       {"{rel} smiled and said, \"Let's {indoor} instead.\" ",
        "Then {rel} had an idea. \"We can {indoor},\" {rel} said. "},
       {"So they did, and it was a lot of fun. ",
        "{hero} liked it very much. {He} laughed and laughed. "},
       {"Later, the sun came out, and {hero} went to the {place} after all. ",
        "When the {weather} stopped, {hero} ran outside to {activity}. "}},
      // Being brave.
      {{"{hero} was afraid of the {fear}. ",
        "There was one thing {hero} did not like: the {fear}. "},
       {"One day, {he} had to be near the {fear} at the {place}. ",
        "At the {place}, {he} saw the {fear} and wanted to run away. "},
       {"\"I am too scared,\" said {hero}. ",
        "{His} legs felt weak. \"I can't do it,\" {he} said. "},
       {"{friend} held {his} hand. \"You can do it. I am with you,\" said {friend}. ",
        "{friend} said, \"Be brave, {hero}. I believe in you.\" "},
       {"{hero} took a deep breath and tried. ",
        "{hero} closed {his} eyes, counted to three, and went. "},
       {"It was not so bad after all! {hero} felt {glad}. ",
        "{He} did it! {hero} smiled a big smile. "},
       {"{hero} learned that being brave is easier with a friend. ",
        "Now {hero} is not afraid of the {fear} anymore. "}},
      // Building something.
      {{"{hero} and {friend} wanted to build a {build}. ",
        "At the {place}, {hero} had an idea. \"Let's build a {build}!\" {he} said. "},
       {"They used {stuff}. They worked very hard. ", "They found {stuff} and started to work. "},
       {"But then the {build} fell down. {hero} felt {sad}. ",
        "Oh no! The wind came and the {build} broke. "},
       {"\"Let's try again,\" said {friend}. \"We can make it better.\" ",
        "{friend} said, \"Don't give up. We can do it together.\" "},
       {"This time, they worked slowly and carefully. ",
        "They tried again and helped each other. "},
       {"At last, the {build} was done. It was the best {build} ever! ",
        "Soon they had a big, strong {build}. They were so {glad}. "},
       {"They learned that when you work together, you can do great things. ",
        "{rel} came to see it and said, \"Good job!\" "}},
      // A race.
      {{"{hero} and {friend} liked to run. ",
        "One day at the {place}, {friend} said, \"Let's have a race!\" "},
       {"\"Ready, set, go!\" said {rel}, and they ran as fast as they could. ",
        "They lined up by the {spot}. \"One, two, three, go!\" "},
       {"{friend} was fast, but then {fhe} fell down and hurt {fhis} knee. ",
        "In the middle of the race, {friend} fell down. "},
       {"{hero} stopped running. {He} went back to help {friend}. ",
        "{hero} did not keep running. {He} turned around to help. "},
       {"\"Are you okay?\" asked {hero}. \"Yes, thank you,\" said {friend}. ",
        "{He} helped {friend} stand up. \"Let's finish together,\" {he} said. "},
       {"They walked to the end together, hand in hand. ",
        "They crossed the line at the same time and laughed. "},
       {"{hero} did not win the race, but {he} felt {glad} inside. ",
        "{rel} said, \"Helping a friend is better than winning.\" "}},
  };
  return all;
}

constexpr std::array<std::string_view, 6> kSettings{
    "The sun was shining and the sky was blue. ",        "It was a warm and sunny day. ",
    "It was a cold morning, and the grass was wet. ",    "The birds were singing in the trees. ",
    "It was a windy day, and the leaves were dancing. ", "It was a quiet afternoon. "};

constexpr std::array<std::string_view, 4> kEndings{
    "The end.", "And they lived happily ever after.", "It was a very good day.",
    "That night, {hero} went to sleep with a big smile."};

template <typename Array>
std::string_view pick(SplitMix& rng, const Array& words) {
  return words[rng.below(words.size())];
}

struct Cast {
  std::array<std::string_view, 32> keys{};
  std::array<std::string_view, 32> values{};
  int count = 0;
  void set(std::string_view key, std::string_view value) {
    TS_CHECK(count < static_cast<int>(keys.size())) << "story cast is full";
    keys[count] = key;
    values[count] = value;
    ++count;
  }
  std::string_view get(std::string_view key) const {
    for (int i = 0; i < count; ++i) {
      if (keys[i] == key) return values[i];
    }
    return {};
  }
};

void expand(std::string_view text, const Cast& cast, std::string* out) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t open = text.find('{', i);
    if (open == std::string_view::npos) {
      out->append(text.substr(i));
      return;
    }
    out->append(text.substr(i, open - i));
    const std::size_t close = text.find('}', open);
    out->append(cast.get(text.substr(open + 1, close - open - 1)));
    i = close + 1;
  }
}

}  // namespace

void generate_story(uint64_t seed, int64_t index, std::string* out) {
  out->clear();
  SplitMix rng(mix_seed(seed, static_cast<uint64_t>(index)));
  const std::size_t hero_index = rng.below(kNames.size());
  const Person hero = kNames[hero_index];
  const Person friend_ = kNames[(hero_index + 1 + rng.below(kNames.size() - 1)) % kNames.size()];
  // Half the heroes are children, half animals with names.
  const bool hero_child = rng.below(2) == 0;
  const bool friend_child = rng.below(2) == 0;
  const std::string_view kind =
      hero_child ? (hero.she ? "little girl" : "little boy") : pick(rng, kAnimalKinds);
  const std::string_view fkind =
      friend_child ? (friend_.she ? "little girl" : "little boy") : pick(rng, kAnimalKinds);

  Cast cast;
  cast.set("hero", hero.name);
  cast.set("He", hero.she ? "She" : "He");
  cast.set("he", hero.she ? "she" : "he");
  cast.set("His", hero.she ? "Her" : "His");
  cast.set("his", hero.she ? "her" : "his");
  cast.set("him", hero.she ? "her" : "him");
  cast.set("friend", friend_.name);
  cast.set("fHe", friend_.she ? "She" : "He");
  cast.set("fhe", friend_.she ? "she" : "he");
  cast.set("fhis", friend_.she ? "her" : "his");
  cast.set("kind", kind);
  cast.set("fkind", fkind);
  cast.set("adj", pick(rng, kAdjectives));
  cast.set("place", pick(rng, kPlaces));
  cast.set("obj", pick(rng, kObjects));
  cast.set("activity", pick(rng, kActivities));
  cast.set("indoor", pick(rng, kIndoor));
  const std::size_t spot = rng.below(kSpots.size());
  cast.set("spot", kSpots[spot]);
  cast.set("spot2", kSpots[(spot + 1 + rng.below(kSpots.size() - 1)) % kSpots.size()]);
  cast.set("sad", pick(rng, kSad));
  cast.set("glad", pick(rng, kGlad));
  cast.set("fear", pick(rng, kFears));
  cast.set("trap", pick(rng, kTraps));
  // The animal in need is never the hero's own kind word for a child hero.
  const std::string_view animal = pick(rng, kAnimalKinds);
  cast.set("animal", animal.substr(animal.find(' ') + 1));
  cast.set("build", pick(rng, kBuilds));
  cast.set("stuff", pick(rng, kStuff));
  cast.set("weather", pick(rng, kWeather));
  cast.set("rel", pick(rng, kRelatives));

  out->reserve(900);
  for (const Step& step : openings()) expand(step[rng.below(step.size())], cast, out);
  const Plot& plot = plots()[rng.below(plots().size())];
  // Half the stories set the scene first; every plot step is told (leaving
  // one out would break the story's logic).
  if (rng.below(2) == 0) expand(pick(rng, kSettings), cast, out);
  for (const Step& step : plot) expand(step[rng.below(step.size())], cast, out);
  expand(pick(rng, kEndings), cast, out);
}

}  // namespace trainscope::training
